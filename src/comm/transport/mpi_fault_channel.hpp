// The fault agreement's side channel between MPI processes (comm/fault_agreement.hpp): its own
// duplicate of MPI_COMM_WORLD, so it never mixes with (or waits behind) a stuck group, and a listener
// thread that, every kPoll:
//  - receives views (MPI_Iprobe + MPI_Recv of what a peer posted) and hands them to the agreement,
//    which answers with this rank's view;
//  - looks at the processes of the peers on this host (/proc/<pid>/stat): one that is gone (or a
//    zombie) is a lost rank, and the listener starts the exchange itself, so a `kill -9` is named
//    within a fraction of a second, before the launcher tears the job down; a stopped one (state T)
//    is named as stopped in the verdict;
//  - lets the agreement decide once its deadline has passed.
// Posting is MPI_Isend to every other rank; sends to a dead or stopped rank never complete and are
// abandoned (the job is ending). Peers on other hosts are not probed: a rank lost there is seen as
// a rank that does not answer the exchange.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/fault_agreement.hpp"

namespace tz {

struct PeerProcess {
  std::string host;
  long pid = 0;
};

class MpiFaultChannel final : public FaultChannel {
 public:
  // Duplicates MPI_COMM_WORLD (collective over the world, at start-up) and starts the listener.
  explicit MpiFaultChannel(std::shared_ptr<FaultAgreement> agreement);
  ~MpiFaultChannel() override;  // stops the listener, frees the communicator
  MpiFaultChannel(const MpiFaultChannel&) = delete;
  MpiFaultChannel& operator=(const MpiFaultChannel&) = delete;

  // Every rank's host and pid (by world rank), once known; only same-host peers are probed.
  void set_peers(std::vector<PeerProcess> peers);
  void post(int from, const std::string& view) override;

 private:
  void listen();
  std::map<int, std::string> probe_peers();

  std::shared_ptr<FaultAgreement> agreement_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::mutex mu_;
  std::vector<PeerProcess> peers_;
  std::vector<std::unique_ptr<std::string>> sent_;  // kept alive for their MPI_Isend
  std::vector<MPI_Request> sends_;
  std::atomic<bool> stop_{false};
  std::thread listener_;
};

}  // namespace tz
