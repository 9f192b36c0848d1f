#include "splitsim/exec/leakage.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace splitsim {
namespace {

// Pairwise Euclidean distances of the rows of x (flattened), U-centred
// (Székely & Rizzo 2014, eq. 3.2): zero diagonal.
torch::Tensor u_centred_distances(const torch::Tensor& x) {
  const torch::Tensor rows = x.reshape({x.size(0), -1}).to(torch::kFloat64);
  const int64_t n = rows.size(0);
  torch::Tensor a = torch::cdist(rows, rows);
  const torch::Tensor row = a.sum(1, true), col = a.sum(0, true), all = a.sum();
  a = a - row / static_cast<double>(n - 2) - col / static_cast<double>(n - 2) +
      all / static_cast<double>((n - 1) * (n - 2));
  a.fill_diagonal_(0);
  return a;
}

// The U-centred inner product (A . B) of Székely & Rizzo, up to the common
// factor 1 / (n (n - 3)), which cancels in the correlation.
double u_inner(const torch::Tensor& a, const torch::Tensor& b) {
  return (a * b).sum().item<double>();
}

void check_rows(const torch::Tensor& a, const torch::Tensor& b, const char* what, int64_t least) {
  if (a.dim() < 1 || b.dim() < 1 || a.size(0) != b.size(0))
    throw std::invalid_argument(std::string(what) + ": both tensors need one row per sample");
  if (a.size(0) < least)
    throw std::invalid_argument(std::string(what) + ": needs at least " + std::to_string(least) +
                                " samples, got " + std::to_string(a.size(0)));
}

std::vector<double> to_vector(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kFloat64).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

}  // namespace

double distance_correlation(const torch::Tensor& x, const torch::Tensor& z) {
  check_rows(x, z, "distance_correlation", 4);
  torch::NoGradGuard no_grad;
  const torch::Tensor a = u_centred_distances(x.detach()), b = u_centred_distances(z.detach());
  const double aa = u_inner(a, a), bb = u_inner(b, b);
  if (!(aa > 0) || !(bb > 0)) return 0;  // a constant tensor: no dependence to measure
  return u_inner(a, b) / std::sqrt(aa * bb);
}

double roc_auc(const std::vector<double>& scores, const std::vector<bool>& positive) {
  if (scores.size() != positive.size()) throw std::invalid_argument("roc_auc: one label per score");
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks, tied scores sharing their mean rank.
  double rank_sum = 0, positives = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) ++j;
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t t = i; t < j; ++t)
      if (positive[order[t]]) {
        rank_sum += mean_rank;
        ++positives;
      }
    i = j;
  }
  const double negatives = static_cast<double>(scores.size()) - positives;
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}

double norm_attack_auc(const torch::Tensor& g, const torch::Tensor& labels) {
  check_rows(g, labels, "norm_attack_auc", 2);
  torch::NoGradGuard no_grad;
  const std::vector<double> norms =
      to_vector(g.detach().reshape({g.size(0), -1}).to(torch::kFloat64).norm(2, 1));
  const std::vector<double> y = to_vector(labels);
  std::vector<double> classes = y;
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  if (classes.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  auto against_rest = [&](double c) {
    std::vector<bool> positive(y.size());
    for (size_t i = 0; i < y.size(); ++i) positive[i] = y[i] == c;
    return roc_auc(norms, positive);
  };
  if (classes.size() == 2) return against_rest(classes[1]);  // Li et al.: class 1 positive
  double sum = 0;
  for (double c : classes) {
    const double auc = against_rest(c);
    sum += std::max(auc, 1 - auc);
  }
  return sum / static_cast<double>(classes.size());
}

void direction_attack_pairs(const torch::Tensor& g, const torch::Tensor& labels,
                            std::vector<double>* scores, std::vector<bool>* same) {
  check_rows(g, labels, "direction_attack_pairs", 1);
  torch::NoGradGuard no_grad;
  const int64_t n = g.size(0);
  const torch::Tensor u =
      torch::nn::functional::normalize(g.detach().reshape({n, -1}).to(torch::kFloat64),
                                       torch::nn::functional::NormalizeFuncOptions().dim(1));
  const std::vector<double> cos = to_vector(u.matmul(u.t()));
  const std::vector<double> y = to_vector(labels);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      scores->push_back(cos[static_cast<size_t>(i * n + j)]);
      same->push_back(y[static_cast<size_t>(i)] == y[static_cast<size_t>(j)]);
    }
}

double direction_attack_auc(const torch::Tensor& g, const torch::Tensor& labels) {
  std::vector<double> scores;
  std::vector<bool> same;
  direction_attack_pairs(g, labels, &scores, &same);
  return roc_auc(scores, same);
}

namespace {

// The attacker's decoder: the attacker set's mean input plus what it
// learns from the activation; its last layer starts at zero, so it starts as
// the trivial attacker and only learns past it.
struct DecoderImpl : torch::nn::Module {
  DecoderImpl(const std::vector<int64_t>& z_shape, const torch::Tensor& mean_input)
      : spatial_(z_shape.size() == 3) {
    x_shape_.assign(mean_input.sizes().begin() + 1, mean_input.sizes().end());
    mean_ = register_buffer("mean", mean_input);
    if (spatial_) {
      conv1_ = register_module(
          "conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(z_shape[0], 16, 3).padding(1)));
      out_conv_ = register_module(
          "conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, x_shape_[0], 3).padding(1)));
    } else {
      int64_t in = 1, out = 1;
      for (int64_t d : z_shape) in *= d;
      for (int64_t d : x_shape_) out *= d;
      out_linear_ = register_module("linear", torch::nn::Linear(in, out));
    }
  }
  torch::Tensor forward(const torch::Tensor& z) {
    std::vector<int64_t> shape = {z.size(0)};
    shape.insert(shape.end(), x_shape_.begin(), x_shape_.end());
    if (!spatial_) return mean_ + out_linear_(z.reshape({z.size(0), -1})).reshape(shape);
    torch::Tensor h = torch::relu(conv1_(z));
    h = torch::nn::functional::interpolate(h,
                                           torch::nn::functional::InterpolateFuncOptions()
                                               .size(std::vector<int64_t>{x_shape_[1], x_shape_[2]})
                                               .mode(torch::kBilinear)
                                               .align_corners(false));
    return mean_ + out_conv_(h);
  }
  // The layer whose weights start at zero.
  std::vector<torch::Tensor> output_parameters() {
    return spatial_ ? out_conv_->parameters() : out_linear_->parameters();
  }
  std::vector<int64_t> x_shape_;
  bool spatial_;
  torch::Tensor mean_;
  torch::nn::Conv2d conv1_{nullptr}, out_conv_{nullptr};
  torch::nn::Linear out_linear_{nullptr};
};
TORCH_MODULE(Decoder);

double psnr_db(double mse, double range) {
  if (!(mse > 0)) return std::numeric_limits<double>::infinity();
  return 10 * std::log10(range * range / mse);
}

}  // namespace

Reconstruction reconstruction_attack(const torch::Tensor& train_z, const torch::Tensor& train_x,
                                     const torch::Tensor& test_z, const torch::Tensor& test_x,
                                     uint64_t seed, int epochs) {
  check_rows(train_z, train_x, "reconstruction_attack (attacker set)", 1);
  check_rows(test_z, test_x, "reconstruction_attack (test set)", 1);
  if (train_x.dim() != 4 || test_x.dim() != 4)
    throw std::invalid_argument("reconstruction_attack: inputs are [n, C, H, W] images");
  const auto tail = [](const torch::Tensor& t) {
    return std::vector<int64_t>(t.sizes().begin() + 1, t.sizes().end());
  };
  // The attacker standardises what it receives by its own set's statistics
  // (per channel, or per feature of a flat activation): the decoder then
  // learns alike whatever the cut's scale and offset.
  torch::Tensor zt = train_z.detach().to(torch::kFloat), ze = test_z.detach().to(torch::kFloat);
  {
    std::vector<int64_t> over = {0};
    if (zt.dim() == 4) over = {0, 2, 3};
    const torch::Tensor mean = zt.mean(over, /*keepdim=*/true);
    torch::Tensor sd = zt.std(over, /*unbiased=*/false, /*keepdim=*/true);
    sd = torch::where(sd > 0, sd, torch::ones_like(sd));  // a constant channel stays 0
    zt = (zt - mean) / sd;
    ze = (ze - mean) / sd;
  }
  const torch::Tensor xt = train_x.detach().to(torch::kFloat),
                      xe = test_x.detach().to(torch::kFloat);
  Decoder decoder(tail(zt), xt.mean(0, true));
  // Its own generator, not the process's: other parties train beside it.
  torch::Generator order = at::detail::createCPUGenerator(seed);
  {
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : decoder->parameters()) {  // PyTorch's default bound, 1 / sqrt(fan-in)
      const double fan_in = p.dim() > 1 ? static_cast<double>(p[0].numel()) : 1.0;
      const double bound = 1 / std::sqrt(fan_in);
      p.copy_(torch::rand(p.sizes(), order) * (2 * bound) - bound);
    }
    for (torch::Tensor& p : decoder->output_parameters()) p.zero_();
  }
  torch::optim::Adam adam(decoder->parameters(), torch::optim::AdamOptions(3e-3));
  const int64_t n = zt.size(0), batch = 32;
  for (int e = 0; e < epochs; ++e) {
    const torch::Tensor perm =
        torch::randperm(n, order, torch::TensorOptions().dtype(torch::kLong));
    for (int64_t i = 0; i < n; i += batch) {
      const torch::Tensor pick = perm.narrow(0, i, std::min(batch, n - i));
      adam.zero_grad();
      torch::Tensor loss =
          torch::mse_loss(decoder->forward(zt.index_select(0, pick)), xt.index_select(0, pick));
      loss.backward();
      adam.step();
    }
  }
  torch::NoGradGuard no_grad;
  decoder->eval();
  Reconstruction r;  // the baseline: the mean input of the attacker set
  const double range = (xe.max() - xe.min()).item<double>();
  r.mse = torch::mse_loss(decoder->forward(ze), xe).item<double>();
  r.baseline_mse = torch::mse_loss(xt.mean(0, true).expand_as(xe), xe).item<double>();
  r.psnr_db = psnr_db(r.mse, range);
  r.baseline_psnr_db = psnr_db(r.baseline_mse, range);
  return r;
}

}  // namespace splitsim
