// troupectl: a command-line tool over a node's management HTTP API (see run.hpp).
#include "troupectl/run.hpp"

#include <iostream>

int main(int argc, char** argv) { return troupectl::run(argc, argv, std::cout, std::cerr); }
