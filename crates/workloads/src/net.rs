//! Models, their parameters as one flat vector, and the weighted gradient of each.
//!
//! Every scheme sums per-part gradients linearly, so any differentiable model stays exact: a
//! node computes `Σ c_j·∇ℓ(θ; x_j)` and `Σ c_j·ℓ(θ; x_j)` over its weighted rows whatever ℓ is.
//!
//! | `model.loss` | parameters (the layout of `theta.txt` and `model.init_path`) |
//! |---|---|
//! | `least-squares`, `logistic` | θ ∈ ℝᵖ (the fused kernel of [`crate::kernel`]) |
//! | `least-squares`, `outputs = C` | θ ∈ ℝ^{p×C}, row-major (θ[k·C + c]); labels one-hot |
//! | `softmax`, `classes = C`, `hidden = [h₁, …]` | for each layer from the input to the output, W (outputs × inputs, row-major) then b |
//!
//! The softmax network's hidden layers are ReLU; its batch forward and backward passes are
//! `dgemm` calls (OpenBLAS, one thread) over blocks of [`BLOCK`] rows.

use outrun_codes::{domain, Rng};
use outrun_config::{Init, Loss, ModelConfig};

use crate::blas::{gemm, Op};
use crate::data::{DataError, Rows};
use crate::kernel::gradient_paced;

/// Rows a network's forward and backward passes take at once (the activations of a block stay
/// in cache; the block size is fixed, so the arithmetic does not depend on pacing).
pub const BLOCK: usize = 256;

/// A model: what its parameters are and how its gradient is computed.
#[derive(Clone, Debug, PartialEq)]
pub enum Net {
    /// A linear model with one output (least squares or logistic).
    Linear(Loss),
    /// Least squares on `outputs` one-hot outputs: θ is `inputs × outputs`.
    MultiOutput {
        /// Features p.
        inputs: usize,
        /// Outputs C.
        outputs: usize,
    },
    /// A softmax over the last layer's outputs after ReLU hidden layers.
    Softmax {
        /// Widths from the input to the output: `[p, h₁, …, C]`.
        sizes: Vec<usize>,
    },
}

/// One layer's place in the flat vector.
#[derive(Clone, Copy, Debug)]
struct Layer {
    inputs: usize,
    outputs: usize,
    /// Offset of W (outputs × inputs); b follows it.
    at: usize,
}

impl Layer {
    fn w<'a>(&self, theta: &'a [f64]) -> &'a [f64] {
        &theta[self.at..self.at + self.outputs * self.inputs]
    }

    fn b<'a>(&self, theta: &'a [f64]) -> &'a [f64] {
        let w = self.at + self.outputs * self.inputs;
        &theta[w..w + self.outputs]
    }
}

impl Net {
    /// The model `model` describes on `p` features.
    pub fn new(model: &ModelConfig, p: usize) -> Self {
        match model.loss {
            Loss::Softmax => {
                let mut sizes = vec![p];
                sizes.extend(&model.hidden);
                sizes.push(model.classes.unwrap_or(2));
                Net::Softmax { sizes }
            }
            Loss::LeastSquares if model.outputs.is_some_and(|c| c > 1) => {
                Net::MultiOutput { inputs: p, outputs: model.outputs.unwrap_or(1) }
            }
            loss => Net::Linear(loss),
        }
    }

    /// Number of parameters (on `p` features for a linear model).
    pub fn len(&self, p: usize) -> usize {
        match self {
            Net::Linear(_) => p,
            Net::MultiOutput { inputs, outputs } => inputs * outputs,
            Net::Softmax { .. } => self.layers().last().map_or(0, |l| l.at + l.outputs * (l.inputs + 1)),
        }
    }

    /// [`Net::len`] without overflow, for refusing a model before it is made: the config bounds
    /// each width, not their products.
    pub fn len_wide(&self, p: usize) -> u128 {
        match self {
            Net::Linear(_) => p as u128,
            Net::MultiOutput { inputs, outputs } => *inputs as u128 * *outputs as u128,
            Net::Softmax { sizes } => sizes.windows(2).map(|w| w[1] as u128 * (w[0] as u128 + 1)).sum(),
        }
    }

    /// A short description: `linear`, `least squares 64×10`, `softmax 64-128-10`.
    pub fn describe(&self) -> String {
        match self {
            Net::Linear(loss) => format!("linear, {} loss", loss.name()),
            Net::MultiOutput { inputs, outputs } => format!("least squares {inputs}×{outputs}"),
            Net::Softmax { sizes } => {
                let s: Vec<String> = sizes.iter().map(ToString::to_string).collect();
                format!("softmax {}", s.join("-"))
            }
        }
    }

    /// Multiply-adds of one sample's gradient on `inputs` features over those of a linear model
    /// on the data's `p` features (forward and backward are each one pass over the weights, as
    /// the linear model's): the modelled compute time's factor (`timing.a` is the time of one
    /// point of a linear model of the data's width).
    pub fn cost(&self, inputs: usize, p: usize) -> f64 {
        self.len(inputs) as f64 / p.max(1) as f64
    }

    fn layers(&self) -> Vec<Layer> {
        let Net::Softmax { sizes } = self else { return vec![] };
        let mut at = 0;
        sizes
            .windows(2)
            .map(|w| {
                let l = Layer { inputs: w[0], outputs: w[1], at };
                at += w[1] * (w[0] + 1);
                l
            })
            .collect()
    }

    /// The seeded initial parameters (`model.init`; default: zero without hidden layers, He
    /// with), a function of `seed` alone.
    pub fn init(&self, init: Option<Init>, seed: u64, p: usize) -> Vec<f64> {
        let hidden = matches!(self, Net::Softmax { sizes } if sizes.len() > 2);
        let init = init.unwrap_or(if hidden { Init::He } else { Init::Zero });
        let mut theta = vec![0.0; self.len(p)];
        if init == Init::Zero {
            return theta;
        }
        let shapes: Vec<(usize, usize, usize)> = match self {
            Net::Linear(_) => vec![(p, 1, 0)],
            Net::MultiOutput { inputs, outputs } => vec![(*inputs, *outputs, 0)],
            Net::Softmax { .. } => self.layers().iter().map(|l| (l.inputs, l.outputs, l.at)).collect(),
        };
        for (k, &(inputs, outputs, at)) in shapes.iter().enumerate() {
            let mut rng = Rng::from_key(&[seed, domain::INIT, k as u64]);
            for w in &mut theta[at..at + inputs * outputs] {
                *w = match init {
                    Init::He => rng.normal() * (2.0 / inputs as f64).sqrt(),
                    Init::Xavier => (2.0 * rng.uniform() - 1.0) * (6.0 / (inputs + outputs) as f64).sqrt(),
                    Init::Zero => 0.0,
                };
            }
        }
        theta
    }

    /// The weighted gradient sum `Σ c_j·∇ℓ(θ; x_j)` into `g` (overwritten) and the weighted loss
    /// sum (returned), calling `pause` every `every` rows (or blocks of rows).
    pub fn gradient(
        &self,
        rows: &Rows,
        coef: &[f64],
        theta: &[f64],
        g: &mut [f64],
        every: usize,
        pause: &mut dyn FnMut(),
    ) -> f64 {
        match self {
            Net::Linear(loss) => gradient_paced(rows, coef, theta, *loss, g, every, pause),
            _ => {
                assert_eq!(coef.len(), rows.len());
                g.iter_mut().for_each(|v| *v = 0.0);
                let mut total = 0.0;
                // buffers kept between calls: a block's activations are past malloc's mmap
                // threshold, and fresh pages cost as much as the products (docs/performance.md
                // §17)
                let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
                for start in (0..rows.len()).step_by(BLOCK) {
                    if start > 0 && every != usize::MAX {
                        pause();
                    }
                    let n = BLOCK.min(rows.len() - start);
                    let x = &rows.features()[start * rows.p()..(start + n) * rows.p()];
                    let (y, c) = (&rows.labels()[start..start + n], &coef[start..start + n]);
                    total += match self {
                        Net::MultiOutput { inputs, outputs } => {
                            let t = rows.targets.as_deref().map(|t| &t[start * outputs..(start + n) * outputs]);
                            multi_block(*inputs, *outputs, x, (y, t), c, theta, g)
                        }
                        _ => self.softmax_block(x, y, c, theta, g, &mut scratch),
                    };
                }
                SCRATCH.with(|s| *s.borrow_mut() = scratch);
                total
            }
        }
    }

    /// Forward pass of a block of `n` rows: the activations of every layer (the last: the
    /// logits).
    fn forward(&self, x: &[f64], n: usize, theta: &[f64], acts: &mut Vec<Vec<f64>>) {
        let layers = self.layers();
        acts.resize(layers.len(), vec![]);
        for (k, l) in layers.iter().enumerate() {
            let (prev, rest) = acts.split_at_mut(k);
            let input = if k == 0 { x } else { &prev[k - 1] };
            let z = &mut rest[0];
            z.clear();
            z.resize(n * l.outputs, 0.0);
            for row in z.chunks_exact_mut(l.outputs) {
                row.copy_from_slice(l.b(theta));
            }
            gemm(1.0, Op::n(input, n, l.inputs), Op::t(l.w(theta), l.outputs, l.inputs), 1.0, z);
            if k + 1 < layers.len() {
                z.iter_mut().for_each(|v| *v = v.max(0.0));
            }
        }
    }

    fn softmax_block(&self, x: &[f64], y: &[f64], c: &[f64], theta: &[f64], g: &mut [f64], s: &mut Scratch) -> f64 {
        let n = y.len();
        let layers = self.layers();
        self.forward(x, n, theta, &mut s.acts);
        let classes = layers.last().expect("a softmax has an output layer").outputs;
        // δ of the output layer: c_j·(softmax(z_j) − e_{y_j}), and the loss
        let mut delta = std::mem::take(s.acts.last_mut().expect("logits"));
        let mut total = 0.0;
        for (j, z) in delta.chunks_exact_mut(classes).enumerate() {
            let label = y[j] as usize;
            let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let zy = z[label];
            let mut sum = 0.0;
            for v in z.iter_mut() {
                *v = libm::exp(*v - max);
                sum += *v;
            }
            total += c[j] * (libm::log(sum) + max - zy);
            for (k, v) in z.iter_mut().enumerate() {
                *v = c[j] * (*v / sum - f64::from(k == label));
            }
        }
        for k in (0..layers.len()).rev() {
            let l = layers[k];
            let input = if k == 0 { x } else { &s.acts[k - 1] };
            let (gw, gb) = g[l.at..l.at + l.outputs * (l.inputs + 1)].split_at_mut(l.outputs * l.inputs);
            gemm(1.0, Op::t(&delta, n, l.outputs), Op::n(input, n, l.inputs), 1.0, gw);
            for row in delta.chunks_exact(l.outputs) {
                for (b, d) in gb.iter_mut().zip(row) {
                    *b += d;
                }
            }
            if k > 0 {
                let mut back = std::mem::take(&mut s.back);
                back.clear();
                back.resize(n * l.inputs, 0.0);
                gemm(1.0, Op::n(&delta, n, l.outputs), Op::n(l.w(theta), l.outputs, l.inputs), 0.0, &mut back);
                for (d, a) in back.iter_mut().zip(input) {
                    if *a <= 0.0 {
                        *d = 0.0;
                    }
                }
                s.back = std::mem::replace(&mut delta, back);
            }
        }
        total
    }

    /// Each row's predicted class (a linear model: 1 when xᵀθ > 0; otherwise the largest
    /// output) and loss, from one forward pass (no gradient).
    fn scores(&self, rows: &Rows, theta: &[f64]) -> Vec<(usize, f64)> {
        let (ys, p) = (rows.labels(), rows.p());
        if let Net::Linear(loss) = self {
            return (0..rows.len())
                .map(|i| {
                    let z = crate::kernel::dot(rows.row(i), theta);
                    (usize::from(z > 0.0), crate::kernel::loss_and_slope(*loss, z, ys[i]).0)
                })
                .collect();
        }
        let c = self.outputs();
        let mut out = Vec::with_capacity(rows.len());
        let mut acts = vec![];
        for start in (0..rows.len()).step_by(BLOCK) {
            let n = BLOCK.min(rows.len() - start);
            let x = &rows.features()[start * p..(start + n) * p];
            let z = match self {
                Net::MultiOutput { inputs, outputs } => {
                    let mut z = vec![0.0; n * outputs];
                    gemm(1.0, Op::n(x, n, *inputs), Op::n(theta, *inputs, *outputs), 0.0, &mut z);
                    z
                }
                _ => {
                    self.forward(x, n, theta, &mut acts);
                    acts.pop().expect("logits")
                }
            };
            out.extend(z.chunks_exact(c).zip(&ys[start..start + n]).map(|(z, &y)| {
                let label = y as usize;
                let loss = match self {
                    Net::MultiOutput { .. } => {
                        0.5 * z.iter().enumerate().map(|(k, v)| (v - f64::from(k == label)).powi(2)).sum::<f64>()
                    }
                    _ => {
                        let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        libm::log(z.iter().map(|v| libm::exp(v - max)).sum::<f64>()) + max - z[label]
                    }
                };
                (argmax(z), loss)
            }));
        }
        out
    }

    /// Outputs per sample.
    fn outputs(&self) -> usize {
        match self {
            Net::Linear(_) => 1,
            Net::MultiOutput { outputs, .. } => *outputs,
            Net::Softmax { sizes } => *sizes.last().expect("sizes"),
        }
    }

    /// Accuracy and mean loss of θ on `rows`.
    pub fn evaluate(&self, rows: &Rows, theta: &[f64]) -> (f64, f64) {
        if rows.is_empty() {
            return (f64::NAN, f64::NAN);
        }
        let scores = self.scores(rows, theta);
        let right = scores.iter().zip(rows.labels()).filter(|((k, _), y)| *k as f64 == **y).count();
        let loss: f64 = scores.iter().map(|s| s.1).sum();
        (right as f64 / rows.len() as f64, loss / rows.len() as f64)
    }

    /// Read initial parameters from `path` (one value per line, this model's layout).
    pub fn read_init(&self, path: &str, p: usize) -> Result<Vec<f64>, DataError> {
        read_values(path, self.len(p), &self.describe())
    }
}

/// The `want` values of `path` (one per line; blank lines and `#` comments skipped), initial
/// parameters of `model` (`model.init_path`).
pub fn read_values(path: &str, want: usize, model: &str) -> Result<Vec<f64>, DataError> {
    let text = crate::input::read_to_string(std::path::Path::new(path))
        .map_err(|e| DataError::read("model.init_path", path, e))?;
    let mut theta = Vec::with_capacity(want);
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let v: f64 = line.parse().map_err(|_| DataError::line(path, ln + 1, format!("`{line}` is not a number")))?;
        if !v.is_finite() {
            return Err(DataError::line(path, ln + 1, format!("`{line}` is not finite")));
        }
        theta.push(v);
    }
    if theta.len() != want {
        return Err(DataError::file(
            path,
            format!(
                "{} value{}, but the model ({model}) has {want} parameters (model.init_path)",
                theta.len(),
                if theta.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(theta)
}

/// Buffers a softmax block reuses.
#[derive(Default)]
struct Scratch {
    acts: Vec<Vec<f64>>,
    back: Vec<f64>,
}

thread_local! {
    /// This thread's block buffers, between gradient calls.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

fn argmax(z: &[f64]) -> usize {
    let mut best = 0;
    for (k, v) in z.iter().enumerate() {
        if *v > z[best] {
            best = k;
        }
    }
    best
}

/// Least squares on one-hot outputs over a block: R = Xθ − Y, loss Σ c_j·½‖R_j‖², g += Xᵀ(c⊙R).
/// One block of multi-output least squares: residuals against the one-hot labels `y`, or against
/// the real targets when given (`Rows::targets`, `n × outputs`).
fn multi_block(
    p: usize,
    outputs: usize,
    x: &[f64],
    (y, targets): (&[f64], Option<&[f64]>),
    c: &[f64],
    theta: &[f64],
    g: &mut [f64],
) -> f64 {
    let n = y.len();
    let mut r = vec![0.0; n * outputs];
    gemm(1.0, Op::n(x, n, p), Op::n(theta, p, outputs), 0.0, &mut r);
    let mut total = 0.0;
    for (j, row) in r.chunks_exact_mut(outputs).enumerate() {
        match targets {
            Some(t) => row.iter_mut().zip(&t[j * outputs..(j + 1) * outputs]).for_each(|(v, t)| *v -= t),
            None => row[y[j] as usize] -= 1.0,
        }
        total += c[j] * 0.5 * row.iter().map(|v| v * v).sum::<f64>();
        row.iter_mut().for_each(|v| *v *= c[j]);
    }
    gemm(1.0, Op::t(x, n, p), Op::n(&r, n, outputs), 1.0, g);
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, p: usize, classes: usize) -> Rows {
        let x = (0..n * p).map(|i| (i as f64 * 0.7).sin()).collect();
        Rows::from_vecs(p, x, (0..n).map(|i| (i % classes) as f64).collect())
    }

    fn softmax(hidden: &[usize], classes: usize) -> ModelConfig {
        ModelConfig { classes: Some(classes), hidden: hidden.to_vec(), ..ModelConfig::linear(Loss::Softmax, 0.1) }
    }

    /// The count a model is refused by agrees with the one it is made with, and does not wrap.
    #[test]
    fn the_wide_count_is_the_parameter_count() {
        let nets = [
            (Net::new(&ModelConfig::linear(Loss::LeastSquares, 0.1), 7), 7),
            (Net::new(&ModelConfig { outputs: Some(3), ..ModelConfig::linear(Loss::LeastSquares, 0.1) }, 5), 5),
            (Net::new(&softmax(&[], 4), 6), 6),
            (Net::new(&softmax(&[8, 5], 3), 6), 6),
        ];
        for (net, p) in nets {
            assert_eq!(net.len_wide(p), net.len(p) as u128, "{}", net.describe());
        }
        let huge = Net::new(&softmax(&[1 << 20, 1 << 20, 1 << 20], 10), 1 << 40);
        assert_eq!(
            huge.len_wide(1 << 40),
            ((1u128 << 20) * ((1 << 40) + 1)) + 2 * (1 << 20) * ((1 << 20) + 1) + 10 * ((1 << 20) + 1)
        );
    }

    /// Real targets equal to the one-hot labels give the labels' gradient and loss (CodedFedL's
    /// parity rows fit G·W·Y through `Rows::targets`).
    #[test]
    fn one_hot_targets_fit_like_the_labels() {
        let (n, p, c) = (300, 4, 3);
        let data = rows(n, p, c);
        let mut hot = data.clone();
        hot.targets = Some((0..n).flat_map(|j| (0..c).map(move |k| f64::from(u8::from(j % c == k)))).collect());
        let net = Net::new(&ModelConfig { outputs: Some(c), ..ModelConfig::linear(Loss::LeastSquares, 0.1) }, p);
        let theta: Vec<f64> = (0..p * c).map(|k| 0.2 * (k as f64).sin()).collect();
        let coef = vec![0.5; n];
        let (mut g1, mut g2) = (vec![0.0; p * c], vec![0.0; p * c]);
        let l1 = net.gradient(&data, &coef, &theta, &mut g1, usize::MAX, &mut || {});
        let l2 = net.gradient(&hot, &coef, &theta, &mut g2, usize::MAX, &mut || {});
        assert_eq!((l1, &g1), (l2, &g2));
        assert_eq!(hot.select([4, 1]).targets.unwrap(), vec![0.0, 1.0, 0.0, 0.0, 1.0, 0.0]);
    }

    /// Central differences of the weighted loss agree with the gradient, for every model.
    #[test]
    fn gradients_match_finite_differences() {
        let (n, p) = (9, 5);
        let data = rows(n, p, 3);
        let coef: Vec<f64> = (0..n).map(|j| 0.5 + 0.25 * j as f64).collect();
        let nets = [
            Net::new(&softmax(&[], 3), p),
            Net::new(&softmax(&[4, 3], 3), p),
            Net::new(&ModelConfig { outputs: Some(3), ..ModelConfig::linear(Loss::LeastSquares, 0.1) }, p),
        ];
        for net in nets {
            let len = net.len(p);
            let theta: Vec<f64> = (0..len).map(|k| 0.3 * ((k as f64) * 1.3).cos()).collect();
            let mut g = vec![0.0; len];
            net.gradient(&data, &coef, &theta, &mut g, usize::MAX, &mut || {});
            let loss = |th: &[f64]| net.gradient(&data, &coef, th, &mut vec![0.0; len], usize::MAX, &mut || {});
            for k in 0..len {
                let h = 1e-6;
                let (mut a, mut b) = (theta.clone(), theta.clone());
                a[k] += h;
                b[k] -= h;
                let fd = (loss(&a) - loss(&b)) / (2.0 * h);
                assert!((fd - g[k]).abs() < 1e-6 * (1.0 + fd.abs()), "{} k={k}: {fd} vs {}", net.describe(), g[k]);
            }
        }
    }

    /// The evaluation's forward-only loss is the gradient's loss, for every model.
    #[test]
    fn evaluation_loss_is_the_gradients_loss() {
        let (n, p) = (BLOCK + 9, 5);
        let data = rows(n, p, 3);
        let nets = [
            Net::new(&softmax(&[4], 3), p),
            Net::new(&ModelConfig { outputs: Some(3), ..ModelConfig::linear(Loss::LeastSquares, 0.1) }, p),
            Net::Linear(Loss::LeastSquares),
        ];
        for net in nets {
            let theta = net.init(Some(Init::Xavier), 5, p);
            let mut g = vec![0.0; net.len(p)];
            let sum = net.gradient(&data, &vec![1.0; n], &theta, &mut g, usize::MAX, &mut || {});
            let (acc, mean) = net.evaluate(&data, &theta);
            assert!(
                (mean - sum / n as f64).abs() < 1e-12 * (1.0 + mean.abs()),
                "{}: {mean} vs {}",
                net.describe(),
                sum / n as f64
            );
            assert!((0.0..=1.0).contains(&acc));
        }
    }

    #[test]
    fn layout_sizes_and_descriptions() {
        let net = Net::new(&softmax(&[128], 10), 64);
        assert_eq!(net.len(64), 128 * 65 + 10 * 129);
        assert_eq!(net.describe(), "softmax 64-128-10");
        assert_eq!(Net::new(&softmax(&[], 10), 784).len(784), 7850);
        let th = net.init(None, 7, 64);
        assert!(th[..128 * 64].iter().any(|&v| v != 0.0), "He by default with hidden layers");
        assert!(th[128 * 64..128 * 65].iter().all(|&v| v == 0.0), "biases start at 0");
        assert_eq!(th, net.init(None, 7, 64), "a function of the seed");
        assert!(Net::new(&softmax(&[], 10), 64).init(None, 7, 64).iter().all(|&v| v == 0.0));
    }

    /// Rows in one block or split across blocks give the same gradient (to round-off).
    #[test]
    fn blocks_add_up() {
        let (n, p) = (BLOCK * 2 + 17, 6);
        let data = rows(n, p, 4);
        let net = Net::new(&softmax(&[5], 4), p);
        let theta = net.init(Some(Init::Xavier), 3, p);
        let mut whole = vec![0.0; net.len(p)];
        let lw = net.gradient(&data, &vec![1.0; n], &theta, &mut whole, usize::MAX, &mut || {});
        let (mut sum, mut ls) = (vec![0.0; net.len(p)], 0.0);
        for idx in [0..100, 100..n] {
            let part = data.select(idx.clone());
            let mut g = vec![0.0; net.len(p)];
            ls += net.gradient(&part, &vec![1.0; idx.len()], &theta, &mut g, usize::MAX, &mut || {});
            sum.iter_mut().zip(&g).for_each(|(s, v)| *s += v);
        }
        assert!(crate::metrics::relative_diff(&sum, &whole) < 1e-12);
        assert!((ls - lw).abs() < 1e-10 * lw.abs());
        let mut pauses = 0;
        net.gradient(&data, &vec![1.0; n], &theta, &mut sum, 1, &mut || pauses += 1);
        assert_eq!(pauses, 2, "a pause between the 3 blocks");
    }
}
