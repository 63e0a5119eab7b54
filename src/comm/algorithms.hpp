// The single-tier collective algorithms, each written once over a Transport (through Collective)
// and defined in the file named after it. Sizes are in bytes except where a dtype is given; blocks
// are described by `offsets` (size()+1 byte offsets, block i = [offsets[i], offsets[i+1])) so that
// all-reduce can use uneven blocks when the count does not divide the group.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "comm/collective.hpp"
#include "comm/comm_options.hpp"
#include "core/dtype.hpp"

namespace tz {

// Byte offsets of p blocks of `count` elements split as evenly as possible (the first count % p
// blocks one element longer), p+1 entries.
std::vector<std::size_t> even_block_offsets(std::size_t count, int p, std::size_t elem_bytes);
// Byte offsets of p equal blocks of `block_bytes`.
std::vector<std::size_t> uniform_block_offsets(std::size_t block_bytes, int p);

// all_gather_ring.cpp: `buf` holds every block; this rank's block (at offsets[rank]) is filled from
// `own` (skipped when own already points there) and the others arrive around the ring.
void all_gather_ring(Collective& c, const std::byte* own, std::byte* buf,
                     std::span<const std::size_t> offsets);

class SharedArena;
// all_gather_shared.cpp: the same result as all_gather_ring, for ranks that share `arena` (one host):
// each block is copied once into shared memory and once out by every other rank.
void all_gather_shared(Collective& c, SharedArena& arena, const std::byte* own, std::byte* buf,
                       std::span<const std::size_t> offsets);

// reduce_scatter_ring.cpp: `send` holds every rank's contribution to every block; `out` receives the
// sum of block rank() (offsets[rank+1]-offsets[rank] bytes). `out` may alias send's block rank().
void reduce_scatter_ring(Collective& c, const std::byte* send, std::byte* out,
                         std::span<const std::size_t> offsets, DType dtype);

// all_reduce_ring.cpp: reduce-scatter then all-gather over even blocks; send == recv allowed.
void all_reduce_ring(Collective& c, const std::byte* send, std::byte* recv, std::size_t count, DType dtype);

// reduce_scatter_shared.cpp: the same result as reduce_scatter_ring (summed in a fixed order, so
// bitwise reproducible, though not in the ring's order), for ranks that share `arena`: each
// contribution is copied once into shared memory and summed straight out of it by its owner.
void reduce_scatter_shared(Collective& c, SharedArena& arena, const std::byte* send, std::byte* out,
                           std::span<const std::size_t> offsets, DType dtype);

// all_reduce_shared.cpp: the same result as all_reduce_ring, for ranks that share `arena` (one host):
// the shared reduce-scatter, then the shared all-gather in place; send == recv allowed.
void all_reduce_shared(Collective& c, SharedArena& arena, const std::byte* send, std::byte* recv,
                       std::size_t count, DType dtype);

// all_to_all_pairwise.cpp: block j of `send` ([send_offsets[j], send_offsets[j+1])) goes to rank j,
// where it lands as recv block rank() ([recv_offsets[rank], ...)); lengths must agree pairwise.
void all_to_all_pairwise(Collective& c, const std::byte* send, std::span<const std::size_t> send_offsets,
                         std::byte* recv, std::span<const std::size_t> recv_offsets);

// all_to_all_shared.cpp: the same result as all_to_all_pairwise, for ranks that share `arena`.
// all_to_all_rounds: each block is copied once into shared memory and once out, in rounds of the
// whole group. `max_block_bytes` is the largest block any rank sends in this call and must be the
// same on every rank (it fixes the number of rounds). all_to_all_shared: in place (each block copied
// once, exchange_in_place) where arena.cross_memory(), else all_to_all_rounds.
void all_to_all_shared(Collective& c, SharedArena& arena, const std::byte* send,
                       std::span<const std::size_t> send_offsets, std::byte* recv,
                       std::span<const std::size_t> recv_offsets, std::size_t max_block_bytes);
void all_to_all_rounds(Collective& c, SharedArena& arena, const std::byte* send,
                       std::span<const std::size_t> send_offsets, std::byte* recv,
                       std::span<const std::size_t> recv_offsets, std::size_t max_block_bytes);
// The shared all-to-all that `asked` runs on `arena` (comm_options.hpp): automatic resolves to pair
// rings on a host where every rank has a core and to rounds on a crowded one; in_place stays in
// place only where the arena allows it (else rounds).
SharedAllToAll resolve_shared_all_to_all(SharedAllToAll asked, const SharedArena& arena);

// all_to_all_pair_rings.cpp: the same result as all_to_all_pairwise, for ranks that share `arena`:
// each (source, destination) pair streams its block through its own ring of chunks in the source's
// staging buffers, with flow control per pair instead of rounds of the whole group.
void all_to_all_pair_rings(Collective& c, SharedArena& arena, const std::byte* send,
                           std::span<const std::size_t> send_offsets, std::byte* recv,
                           std::span<const std::size_t> recv_offsets);
// How the pair rings cut a rank's `staging_bytes` among p - 1 destinations: chunks of about
// kPairRingChunkBytes (a multiple of 64 bytes once that large), 2-64 of them per ring.
inline constexpr std::size_t kPairRingChunkBytes = 64 * 1024;
struct PairRingShape {
  std::size_t chunk_bytes = 0, depth = 0;
};
PairRingShape pair_ring_shape(std::size_t staging_bytes, int p);

// exchange_in_place.cpp: one single-copy exchange over an arena whose ranks can read each other's
// memory (SharedArena::cross_memory): this rank offers offer(j) of its own memory to each peer j and
// copies what each peer q offers it straight into into(q) (the lengths must agree); it returns once
// every peer has read what it offered. The shared all-to-all, and the all-gather of two ranks, run
// as one such exchange when the arena allows it (each block then has a single reader).
void exchange_in_place(Collective& c, SharedArena& arena,
                       const std::function<std::span<const std::byte>(int to)>& offer,
                       const std::function<std::span<std::byte>(int from)>& into);

// The bytes of one destination's piece of a staging slot when a slot is cut into p - 1 pieces
// (all_to_all_shared, reduce_scatter_shared): a multiple of 64 bytes when a share is that large,
// else of elem_bytes, and at least one element.
std::size_t shared_piece_bytes(std::size_t slot_bytes, int p, std::size_t elem_bytes);

// broadcast_binomial.cpp: root's `bytes` reach every rank down a binomial tree, chunk-pipelined.
void broadcast_binomial(Collective& c, std::byte* buf, std::size_t bytes, int root);

// broadcast_shared.cpp: the same result as broadcast_binomial, for ranks that share `arena`: the
// root copies each piece once into shared memory and every other rank copies it out.
void broadcast_shared(Collective& c, SharedArena& arena, std::byte* buf, std::size_t bytes, int root);

// barrier_dissemination.cpp: ceil(log2 p) rounds of empty messages.
void barrier_dissemination(Collective& c);

}  // namespace tz
