// splitsim-simworker: serves simulation requests on its standard input, a
// socket from the process that started it (worker.h). Links the simulator
// and never LibTorch, so that forking it for each simulation is cheap.
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include "worker.h"

int main(int argc, char** argv) {
  if (argc != 1 || ::isatty(STDIN_FILENO)) {
    std::fprintf(stderr,
                 "splitsim-simworker: started by splitsim, which sends it simulations on its "
                 "standard input; it takes no arguments\n");
    return 2;
  }
  // Ctrl-C in a terminal reaches the whole process group, the worker too.
  // The process that started it decides: the command line exits (then the
  // worker reads the end of its input and exits), the Python package stops
  // between batches and keeps its workers for the next call.
  std::signal(SIGINT, SIG_IGN);
  splitsim::sim_internal::serve_simulations(STDIN_FILENO);
  return 0;
}
