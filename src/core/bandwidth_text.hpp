// Bandwidths as users write them. A JSON number under a `_GBps` key is GB/s: 1e9 bytes per second.
// A string carries its own unit and is read exactly: a decimal number, an optional space, then one of
//   B/s kB/s MB/s GB/s TB/s      bytes, decimal prefixes (1 GB/s = 1e9 B/s)
//   KiB/s MiB/s GiB/s TiB/s      bytes, binary prefixes (1 GiB/s = 2^30 B/s)
//   kb/s Mb/s Gb/s Tb/s          bits, decimal prefixes (a NIC's "400 Gb/s" = 50 GB/s)
// Units are case-sensitive (b is a bit, B a byte); anything else ("400G", "50 gbps") is an error.
#pragma once

#include <string_view>

namespace tz {

// The bandwidth `text` names, in GB/s. InputError naming `what`, the text and the accepted units when it
// is not exactly a finite number followed by one of them.
double parse_bandwidth_GBps(std::string_view text, std::string_view what);

// "GB/s" units accepted by parse_bandwidth_GBps, for messages.
std::string_view bandwidth_units_help();

}  // namespace tz
