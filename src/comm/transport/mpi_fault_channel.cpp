// The MPI side channel of the fault agreement (mpi_fault_channel.hpp).
#include "comm/transport/mpi_fault_channel.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "comm/transport/mpi_check.hpp"
#include "comm/transport/mpi_transport.hpp"

namespace tz {
namespace {

constexpr int kViewTag = 1;
constexpr auto kPoll = std::chrono::milliseconds(20);
constexpr int kProbeEvery = 5;  // polls between looks at the peers' processes (100 ms)

// "gone", "stopped" or "" (running) for a process of this host.
std::string process_state(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return "gone";
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return "";
  const char state = text[close + 2];
  if (state == 'Z' || state == 'X') return "gone";
  if (state == 'T' || state == 't') return "stopped";
  return "";
}

std::string this_host() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "?";
  return host;
}

}  // namespace

MpiFaultChannel::MpiFaultChannel(std::shared_ptr<FaultAgreement> agreement)
    : agreement_(std::move(agreement)) {
  {
    auto lock = mpi_call_lock();
    TZ_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    TZ_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    TZ_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    TZ_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  agreement_->set_channel(this);
  agreement_->set_peer_probe([this] { return probe_peers(); });
  listener_ = std::thread([this] { listen(); });
}

MpiFaultChannel::~MpiFaultChannel() {
  stop_ = true;
  if (listener_.joinable()) listener_.join();
  agreement_->set_channel(nullptr);
  agreement_->set_peer_probe(nullptr);
  auto lock = mpi_call_lock();
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

void MpiFaultChannel::set_peers(std::vector<PeerProcess> peers) {
  std::vector<std::string> hosts;
  for (const PeerProcess& p : peers) hosts.push_back(p.host);
  agreement_->set_rank_hosts(std::move(hosts));
  std::lock_guard lock(mu_);
  peers_ = std::move(peers);
}

std::map<int, std::string> MpiFaultChannel::probe_peers() {
  std::vector<PeerProcess> peers;
  {
    std::lock_guard lock(mu_);
    peers = peers_;
  }
  std::map<int, std::string> states;
  const std::string host = this_host();
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    if (r == rank_ || peers[r].host != host || peers[r].pid <= 0) continue;
    const std::string s = process_state(peers[r].pid);
    if (!s.empty()) states[r] = s;
  }
  return states;
}

void MpiFaultChannel::post(int /*from*/, const std::string& view) {
  std::lock_guard lock(mu_);
  auto mpi = mpi_call_lock();
  auto& text = sent_.emplace_back(std::make_unique<std::string>(view));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    // Best effort: a failing send (a dead peer's connection) leaves that peer silent in the verdict.
    if (MPI_Isend(text->data(), static_cast<int>(text->size()), MPI_CHAR, peer, kViewTag, comm_, &req) ==
        MPI_SUCCESS)
      sends_.push_back(req);
  }
}

void MpiFaultChannel::listen() {
  int polls = 0;
  while (!stop_) {
    for (;;) {  // every message that is there
      int flag = 0;
      MPI_Status status;
      std::string text;
      {
        auto lock = mpi_call_lock();
        if (MPI_Iprobe(MPI_ANY_SOURCE, kViewTag, comm_, &flag, &status) != MPI_SUCCESS || !flag) break;
        int bytes = 0;
        MPI_Get_count(&status, MPI_CHAR, &bytes);
        text.resize(static_cast<std::size_t>(std::max(bytes, 0)));
        if (MPI_Recv(text.data(), bytes, MPI_CHAR, status.MPI_SOURCE, kViewTag, comm_, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
          break;
      }
      agreement_->deliver(status.MPI_SOURCE, text);
    }
    if (++polls % kProbeEvery == 0 && !agreement_->started()) {
      for (const auto& [peer, state] : probe_peers())
        if (state == "gone") {
          agreement_->start();
          break;
        }
    }
    agreement_->poll();
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace tz
