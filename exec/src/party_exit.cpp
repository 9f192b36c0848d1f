#include "splitsim/exec/party_exit.h"

#include <cstdlib>
#include <iostream>

namespace splitsim {

void exit_after_failed_party(const std::string& error) {
  std::cout.flush();
  std::cerr << "error: " << error << "\n";
  std::cerr.flush();
  std::_Exit(1);
}

}  // namespace splitsim
