// Delay-injecting transport wrapper (delay_transport.hpp): every call is forwarded to the wrapped
// transport; posting a send or receive first sleeps the injector's next delay.
#include "comm/transport/delay_transport.hpp"

#include "comm/delay_injector.hpp"
#include "core/counter_rng.hpp"
#include "core/error.hpp"

namespace tz {
namespace {

class DelayTransport final : public Transport {
 public:
  DelayTransport(std::unique_ptr<Transport> inner, DelayInjection config, std::uint64_t stream)
      : inner_(std::move(inner)), config_(config), stream_(stream), delays_(config, stream) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int world_rank(int peer) const override { return inner_->world_rank(peer); }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    delays_.pause();
    return inner_->isend(data, bytes, peer, tag);
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    delays_.pause();
    return inner_->irecv(data, bytes, peer, tag);
  }
  bool wait_all(std::span<Request> requests, Deadline deadline) override {
    return inner_->wait_all(requests, deadline);
  }
  void cancel(std::span<Request> requests) override { inner_->cancel(requests); }

  std::unique_ptr<Transport> split(int color, int key, Deadline deadline) override {
    std::unique_ptr<Transport> sub = inner_->split(color, key, deadline);
    const std::uint64_t child =
        splitmix64(stream_ ^ splitmix64((++splits_ << 32) ^ static_cast<std::uint32_t>(color)));
    return std::make_unique<DelayTransport>(std::move(sub), config_, child);
  }

  bool can_share_memory() const override { return inner_->can_share_memory(); }
  void check_aborted() override { inner_->check_aborted(); }
  void inject_delay() override { delays_.pause(); }
  double now_s() const override { return inner_->now_s(); }
  void on_local_reduce(std::size_t bytes) override { inner_->on_local_reduce(bytes); }

  std::uint64_t draws() const { return delays_.draws(); }

 private:
  std::unique_ptr<Transport> inner_;
  DelayInjection config_;
  std::uint64_t stream_;
  std::uint64_t splits_ = 0;
  DelayInjector delays_;
};

}  // namespace

std::unique_ptr<Transport> make_delay_transport(std::unique_ptr<Transport> inner, DelayInjection config,
                                                std::uint64_t stream) {
  TZ_CHECK(inner != nullptr);
  return std::make_unique<DelayTransport>(std::move(inner), config, stream);
}

long long delay_transport_draws(const Transport& transport) {
  const auto* d = dynamic_cast<const DelayTransport*>(&transport);
  return d ? static_cast<long long>(d->draws()) : -1;
}

}  // namespace tz
