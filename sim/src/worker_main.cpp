// splitsim-simworker: serves simulation requests on its standard input, a
// socket from the process that started it (worker.h). Links the simulator
// and never LibTorch, so that forking it for each simulation is cheap.
#include <unistd.h>

#include <cstdio>

#include "worker.h"

int main(int argc, char** argv) {
  if (argc != 1 || ::isatty(STDIN_FILENO)) {
    std::fprintf(stderr,
                 "splitsim-simworker: started by splitsim, which sends it simulations on its "
                 "standard input; it takes no arguments\n");
    return 2;
  }
  splitsim::sim_internal::serve_simulations(STDIN_FILENO);
  return 0;
}
