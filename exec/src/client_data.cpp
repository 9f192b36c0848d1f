#include "splitsim/exec/client_data.h"

#include <algorithm>
#include <random>
#include <string>

#include "splitsim/costmodel/errors.h"

namespace splitsim {
namespace {

constexpr int kDraws = 100;

ClientPartition iid(int64_t n, int clients, std::mt19937_64* gen) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), *gen);
  ClientPartition p;
  const int64_t each = n / clients;
  for (int c = 0; c < clients; ++c)
    p.samples.emplace_back(order.begin() + c * each, order.begin() + (c + 1) * each);
  return p;
}

// One draw: per class, its shuffled samples cut by Dirichlet(alpha) shares.
ClientPartition dirichlet(const std::vector<std::vector<int64_t>>& by_class, int clients,
                          double alpha, std::mt19937_64* gen) {
  ClientPartition p;
  p.samples.resize(static_cast<size_t>(clients));
  std::gamma_distribution<double> gamma(alpha, 1.0);
  for (std::vector<int64_t> members : by_class) {
    std::shuffle(members.begin(), members.end(), *gen);
    std::vector<double> share(static_cast<size_t>(clients));
    double total = 0;
    for (double& s : share) total += s = gamma(*gen);
    if (!(total > 0)) {  // every draw underflowed (alpha near 0): the one-hot limit
      share[std::uniform_int_distribution<size_t>(0, share.size() - 1)(*gen)] = total = 1;
    }
    const auto n = static_cast<double>(members.size());
    double cumulative = 0;
    size_t from = 0;
    for (int c = 0; c < clients; ++c) {
      cumulative += share[static_cast<size_t>(c)] / total;
      const size_t to = c + 1 == clients
                            ? members.size()
                            : std::min(members.size(), static_cast<size_t>(cumulative * n + 0.5));
      auto& mine = p.samples[static_cast<size_t>(c)];
      mine.insert(mine.end(), members.begin() + static_cast<std::ptrdiff_t>(from),
                  members.begin() + static_cast<std::ptrdiff_t>(std::max(from, to)));
      from = std::max(from, to);
    }
  }
  return p;
}

int64_t smallest(const ClientPartition& p) {
  size_t least = p.samples.front().size();
  for (const auto& s : p.samples) least = std::min(least, s.size());
  return static_cast<int64_t>(least);
}

class ClientImageSource : public BatchSource {
 public:
  ClientImageSource(const LabeledImages& data, const ClientPartition& partition,
                    std::vector<int64_t> shape, uint64_t seed) {
    for (const auto& mine : partition.samples) {
      const torch::Tensor idx = torch::tensor(mine, torch::kLong);
      sources_.push_back(make_image_source(
          {data.images.index_select(0, idx), data.labels.index_select(0, idx)}, shape, seed));
    }
  }
  std::pair<torch::Tensor, torch::Tensor> batch(int client, int64_t index,
                                                int64_t batch_size) override {
    return sources_.at(static_cast<size_t>(client))->batch(client, index, batch_size);
  }
  torch::Tensor target(int client, int64_t index, int64_t batch_size) override {
    return sources_.at(static_cast<size_t>(client))->target(client, index, batch_size);
  }

 private:
  std::vector<std::unique_ptr<BatchSource>> sources_;
};

}  // namespace

ClientPartition partition_samples(const torch::Tensor& labels, int64_t classes, int clients,
                                  double alpha, uint64_t seed, int64_t min_samples) {
  const int64_t n = labels.size(0);
  if (n / clients < min_samples)
    throw InputError("clients", std::to_string(n) + " training samples give " +
                                    std::to_string(clients) + " clients fewer than " +
                                    std::to_string(min_samples) + " each (a batch)");
  std::mt19937_64 gen(seed * 2654435761u + 17);
  const torch::Tensor lab = labels.to(torch::kLong).contiguous();
  const int64_t* l = lab.data_ptr<int64_t>();
  ClientPartition p;
  if (alpha <= 0) {
    p = iid(n, clients, &gen);
  } else {
    std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(classes));
    for (int64_t i = 0; i < n; ++i) by_class[static_cast<size_t>(l[i])].push_back(i);
    for (int draw = 0; draw < kDraws; ++draw) {
      p = dirichlet(by_class, clients, alpha, &gen);
      if (smallest(p) >= min_samples) break;
    }
    if (smallest(p) < min_samples)
      throw InputError("alpha", "in " + std::to_string(kDraws) + " draws of Dirichlet(" +
                                    std::to_string(alpha) + ") some client of " +
                                    std::to_string(clients) + " always held fewer than " +
                                    std::to_string(min_samples) +
                                    " samples (a batch); raise alpha or the samples");
  }
  for (const auto& mine : p.samples) {
    std::vector<int64_t> counts(static_cast<size_t>(classes), 0);
    for (int64_t i : mine) ++counts[static_cast<size_t>(l[i])];
    p.class_counts.push_back(counts);
  }
  return p;
}

std::unique_ptr<BatchSource> make_client_image_source(const LabeledImages& data,
                                                      const ClientPartition& partition,
                                                      std::vector<int64_t> input_shape,
                                                      uint64_t seed) {
  return std::make_unique<ClientImageSource>(data, partition, std::move(input_shape), seed);
}

}  // namespace splitsim
