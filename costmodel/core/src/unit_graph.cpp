#include "splitsim/costmodel/unit_graph.h"

#include <cassert>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

namespace splitsim {
namespace {

// Vertex 0 is the model input; vertex i+1 is units[i].
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

Graph build_graph(const ModelProfile& profile) {
  const int n = static_cast<int>(profile.units.size());
  Graph g(n + 1);
  for (int i = 0; i < n; ++i)
    for (int producer : profile.units[i].inputs) boost::add_edge(producer + 1, i + 1, g);
  return g;
}

}  // namespace

std::vector<CutPoint> valid_cuts(const ModelProfile& profile) {
  const Graph g = build_graph(profile);
  // Units must already be in a topological order (every edge points forward):
  // a partition is a range of units, so model order must be execution order.
  std::vector<Graph::vertex_descriptor> order;
  boost::topological_sort(g, std::back_inserter(order));  // throws on a cycle
  for (auto e : boost::make_iterator_range(boost::edges(g)))
    if (boost::source(e, g) >= boost::target(e, g))
      throw std::logic_error("unit graph of " + profile.model + ": unit " +
                             std::to_string(boost::target(e, g) - 1) + " consumes a later unit");

  std::vector<CutPoint> cuts;
  const int n = static_cast<int>(profile.units.size());
  for (int c = 1; c < n; ++c) {
    // Distinct tensors crossing: producers before the cut with a consumer after it.
    int crossing = 0;
    int producer_seen = -2;
    for (int v = 0; v <= c; ++v) {  // vertices of producers: input (0) and units 0..c-1
      bool crosses = false;
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g)))
        if (static_cast<int>(boost::target(e, g)) > c) crosses = true;
      if (crosses) {
        ++crossing;
        producer_seen = v - 1;
      }
    }
    if (crossing != 1) continue;
    CutPoint cut;
    cut.position = c;
    cut.before = profile.units[c - 1].name;
    cut.after = profile.units[c].name;
    cut.shape = producer_seen >= 0 ? profile.units[producer_seen].output_shape : profile.input_shape;
    cuts.push_back(cut);
  }
  return cuts;
}

}  // namespace splitsim
