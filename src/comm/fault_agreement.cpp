// The exchange of views and the decision (fault_agreement.hpp).
#include "comm/fault_agreement.hpp"

#include <chrono>
#include <set>

namespace tz {

FaultAgreement::FaultAgreement(std::shared_ptr<FlightRecorder> recorder, double deadline_s)
    : recorder_(std::move(recorder)), deadline_s_(deadline_s), views_(recorder_->world_size()) {}

FaultAgreement::~FaultAgreement() {
  recorder_->set_on_timeout(nullptr);
}

void FaultAgreement::set_channel(FaultChannel* channel) {
  std::lock_guard lock(mu_);
  channel_ = channel;
}

void FaultAgreement::set_peer_probe(std::function<std::map<int, std::string>()> probe) {
  std::lock_guard lock(mu_);
  probe_ = std::move(probe);
}

void FaultAgreement::add_on_verdict(std::function<void(const FaultVerdict&)> hook) {
  std::lock_guard lock(mu_);
  on_verdict_.push_back(std::move(hook));
}

void FaultAgreement::set_rank_hosts(std::vector<std::string> hosts) {
  std::lock_guard lock(mu_);
  rank_hosts_ = std::move(hosts);
}

void FaultAgreement::install_timeout_hook() {
  // The destructor removes it again, so a recorder that outlives the agreement never calls it.
  recorder_->set_on_timeout([this](const std::string& report) { return on_timeout(report); });
}

bool FaultAgreement::started() const {
  std::lock_guard lock(mu_);
  return posted_;
}

std::optional<FaultVerdict> FaultAgreement::verdict() const {
  std::lock_guard lock(mu_);
  return verdict_;
}

void FaultAgreement::post_once() {
  std::function<std::map<int, std::string>()> probe;
  FaultChannel* channel = nullptr;
  {
    std::lock_guard lock(mu_);
    if (posted_) return;
    posted_ = true;
    deadline_ = Clock::now() +
                std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline_s_));
    probe = probe_;
    channel = channel_;
  }
  RankView mine = make_rank_view(*recorder_, probe ? probe() : std::map<int, std::string>{});
  const std::string text = rank_view_to_string(mine);
  {
    std::unique_lock lock(mu_);
    views_[recorder_->world_rank()] = std::move(mine);
    if (complete_locked()) decide(lock);
  }
  if (channel) channel->post(recorder_->world_rank(), text);
}

bool FaultAgreement::complete_locked() const {
  std::set<int> gone;
  for (const auto& v : views_)
    if (v)
      for (const auto& [peer, state] : v->peer_states)
        if (state == "gone") gone.insert(peer);
  for (int r = 0; r < static_cast<int>(views_.size()); ++r)
    if (!views_[r] && !gone.count(r)) return false;
  return true;
}

// Called with the lock held; releases it to run the hooks.
void FaultAgreement::decide(std::unique_lock<std::mutex>& lock) {
  if (verdict_) return;
  std::vector<std::optional<RankView>> views = views_;
  // The others decided without this rank's view: decide as they did, so every rank prints one line.
  if (late_) views[recorder_->world_rank()].reset();
  verdict_ = agree_culprit(views, deadline_s_);
  verdict_->line = name_culprit_hosts(*verdict_, rank_hosts_);
  const FaultVerdict v = *verdict_;
  auto hooks = on_verdict_;
  cv_.notify_all();
  lock.unlock();
  for (const auto& h : hooks) h(v);
  lock.lock();
}

void FaultAgreement::deliver(int from, const std::string& view) {
  std::optional<RankView> v = rank_view_from_string(view);
  if (!v || v->world_rank != from || from < 0 || from >= static_cast<int>(views_.size())) return;
  post_once();  // answer first: the sender waits for this rank's view
  std::unique_lock lock(mu_);
  const auto& mine = views_[recorder_->world_rank()];
  if (mine && mine->posted_s > v->posted_s + deadline_s_) late_ = true;
  if (verdict_) return;  // too late: this rank has decided (the sender decides without it)
  views_[from] = std::move(v);
  if (complete_locked()) decide(lock);
}

void FaultAgreement::start() {
  post_once();
}

void FaultAgreement::poll() {
  std::unique_lock lock(mu_);
  if (posted_ && !verdict_ && (complete_locked() || Clock::now() >= deadline_)) decide(lock);
}

std::string FaultAgreement::on_timeout(const std::string& /*report*/) {
  post_once();
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, deadline_, [&] { return verdict_.has_value(); });
  if (!verdict_) decide(lock);
  return verdict_->line;
}

void ThreadFaultBoard::attach(int rank, std::shared_ptr<FaultAgreement> agreement) {
  std::lock_guard lock(mu_);
  agreements_.at(rank) = std::move(agreement);
}

void ThreadFaultBoard::post(int from, const std::string& view) {
  std::vector<std::shared_ptr<FaultAgreement>> all;
  {
    std::lock_guard lock(mu_);
    all = agreements_;
  }
  for (int r = 0; r < static_cast<int>(all.size()); ++r)
    if (r != from && all[r]) all[r]->deliver(from, view);
}

}  // namespace tz
