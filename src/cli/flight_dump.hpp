// Writing the flight recorders of this process's ranks (comm/flight_recorder.hpp) when something goes
// wrong: a rank's body failed (timeout, abort, any error: run_world dumps before it reports), a fatal
// signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT), or SIGUSR1 (a dump on request, the run goes on).
// Signals are turned into dumps on a dumper thread (the handler only writes a byte to a pipe), so the
// JSON is built outside signal context; a fatal signal waits up to 3 s for the dump, then takes its
// default action.
#pragma once

#include <memory>
#include <string>

#include "comm/flight_recorder.hpp"

namespace tz::cli {

// Each rank of this process registers its recorder and its file for as long as it runs.
void register_flight_recorder(const std::shared_ptr<FlightRecorder>& recorder, const std::string& path);
void unregister_flight_recorder(const FlightRecorder* recorder);

// Writes the file of `recorder` (registered or not); prints one line on stderr saying where, or why
// it could not.
void dump_flight_recorder(const FlightRecorder& recorder, const std::string& path, const std::string& reason);
// Writes every registered recorder's file.
void dump_all_flight_recorders(const std::string& reason);

// Installs the SIGUSR1 and fatal-signal handlers and starts the dumper thread (once per process).
void install_flight_signals();

}  // namespace tz::cli
