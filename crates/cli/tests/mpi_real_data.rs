//! Real digits (scikit-learn's bundled digits in data/) through `mpirun`: logistic regression, 4
//! against 9 (configs/real-digits.toml), a 64-128-10 network on all ten (configs/mlp-digits.toml)
//! and kernel regression on random Fourier features (configs/rff-digits.toml) follow their serial
//! references exactly under their stragglers, and the test accuracy a run reports is the test's
//! own count on the held-out file (or scikit-learn's, for the kernel).

mod common;

use common::*;

fn config() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::fs::read_to_string(format!("{root}/configs/real-digits.toml"))
        .unwrap()
        .replace("\"../data/", &format!("\"{root}/data/"))
        .replace("iterations = 100", "iterations = 30")
}

/// The test's own reading of a LIBSVM file with 64 features: (rows, labels).
fn read(path: &str) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut xs = vec![];
    let mut ys = vec![];
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let mut f = line.split_whitespace();
        ys.push(f.next().unwrap().parse().unwrap());
        let mut x = vec![0.0; 64];
        for kv in f {
            let (k, v) = kv.split_once(':').unwrap();
            x[k.parse::<usize>().unwrap() - 1] = v.parse().unwrap();
        }
        xs.push(x);
    }
    (xs, ys)
}

/// The repository's LIBSVM file `name` (data/) written into `dir` with each `index:value` token
/// replaced by `token(index, value)`; its path.
fn rewrite_digits(dir: &std::path::Path, name: &str, token: impl Fn(usize, &str) -> String) -> std::path::PathBuf {
    let text = std::fs::read_to_string(format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let out: String = text
        .lines()
        .map(|l| {
            let mut it = l.split_whitespace();
            let mut line = it.next().unwrap_or_default().to_string();
            for tok in it {
                let (i, v) = tok.split_once(':').unwrap();
                line.push(' ');
                line.push_str(&token(i.parse().unwrap(), v));
            }
            line + "\n"
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn coded_reduce_and_gc_train_on_real_digits_exactly() {
    let text = config();
    let test_file = format!("{}/../../data/digits-4-9-test.libsvm", env!("CARGO_MANIFEST_DIR"));
    let (x, y) = read(&test_file);
    assert_eq!(x.len(), 72);
    let train_file = format!("{}/../../data/digits-4-9-train.libsvm", env!("CARGO_MANIFEST_DIR"));
    for (tag, sets) in [
        ("digits-cr", vec!["run.trajectory=true"]),
        (
            "digits-gc",
            vec![
                "run.trajectory=true",
                "scheme.kind=gc-cyclic",
                "scheme.n=",
                "scheme.layers=",
                "scheme.workers=12",
                "scheme.s=1",
                "scheme.code=",
            ],
        ),
    ] {
        let (run, dir, _, all_sets) = train(tag, &text, &sets);
        assert_eq!(run.code, Some(0), "{tag}: {}", run.stderr);
        let got = trajectory(&dir);
        let want = reference(&text, &all_sets);
        let diff = max_rel_diff(&got, &want);
        assert!(diff <= 1e-9, "{tag}: θ differs from serial GD by {diff:e}");
        let rows = iterations(&dir);
        assert!(rows.iter().all(|r| r["exact"] == "true"), "{tag}");
        // the loss column is the mean logistic loss per training row at the iteration's θ
        // (softplus(z) − y·z), the test's own sum over the file divided by its 289 rows
        let (train_x, train_y) = read(&train_file);
        assert_eq!(train_x.len(), 289);
        for (row, theta_t) in rows.iter().zip(&want) {
            let mean = train_x
                .iter()
                .zip(&train_y)
                .map(|(x, &y)| {
                    let z: f64 = x.iter().zip(theta_t).map(|(a, b)| a * b).sum();
                    z.max(0.0) + (-z.abs()).exp().ln_1p() - y * z
                })
                .sum::<f64>()
                / 289.0;
            let logged: f64 = row["loss"].parse().unwrap();
            assert!(
                (logged - mean).abs() <= 1e-9 * mean.abs(),
                "{tag}: iteration {}: loss {logged}, mean {mean}",
                row["iteration"]
            );
        }
        // the reported accuracy is the test's own count with the final θ
        let theta = want.last().unwrap();
        let right = x
            .iter()
            .zip(&y)
            .filter(|(row, &label)| (row.iter().zip(theta).map(|(a, b)| a * b).sum::<f64>() > 0.0) == (label == 1.0))
            .count();
        let reported: f64 = rows.last().unwrap()["test_accuracy"].parse().unwrap();
        assert!((reported - right as f64 / 72.0).abs() < 1e-6, "{tag}: reported {reported}, counted {right}/72");
        assert!(reported > 0.9, "{tag}: test accuracy {reported}");
        assert_eq!(summary(&dir)["final_test_accuracy"].as_f64().unwrap(), reported);
        assert!(run.stdout.contains("test accuracy"), "{}", run.stdout);
        eprintln!("{tag}: θ within {diff:.1e} of serial GD, test accuracy {reported}");
    }
}

/// A shipped config with its data paths made absolute.
fn shipped(name: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::fs::read_to_string(format!("{root}/configs/{name}")).unwrap().replace("\"../data/", &format!("\"{root}/data/"))
}

/// The serial reference of a config, through its job (the feature map, batches and θ₀ included).
fn job_reference(text: &str, sets: &[String]) -> Vec<f64> {
    let cfg = outrun_config::parse(text, sets).unwrap();
    let plan = outrun_workloads::resolve(&cfg).unwrap();
    outrun_workloads::job(&plan).reference(&plan).unwrap()
}

/// The test's own forward pass of a ReLU network of widths `sizes` (layout: W1, b1, W2, b2, …):
/// the class.
fn mlp_class(theta: &[f64], sizes: &[usize], x: &[f64]) -> usize {
    let (mut a, mut at) = (x.to_vec(), 0);
    for (l, w) in sizes.windows(2).enumerate() {
        let (inp, out) = (w[0], w[1]);
        let z: Vec<f64> = (0..out)
            .map(|o| theta[at + out * inp + o] + (0..inp).map(|i| theta[at + o * inp + i] * a[i]).sum::<f64>())
            .collect();
        a = if l + 2 < sizes.len() { z.into_iter().map(|v| v.max(0.0)).collect() } else { z };
        at += out * (inp + 1);
    }
    (0..a.len()).fold(0, |best, c| if a[c] > a[best] { c } else { best })
}

/// The test's own reading of a gzip IDX file: its dimensions and bytes.
fn read_idx(path: &str) -> (Vec<usize>, Vec<u8>) {
    use std::io::Read;
    let mut bytes = vec![];
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_end(&mut bytes).unwrap();
    let ndim = bytes[3] as usize;
    let dims =
        (0..ndim).map(|k| u32::from_be_bytes(bytes[4 + 4 * k..8 + 4 * k].try_into().unwrap()) as usize).collect();
    (dims, bytes[4 + 4 * ndim..].to_vec())
}

/// configs/mlp-digits.toml through mpirun: the 64-128-10 network trained by mini-batch SGD under
/// gradient coding equals the serial reference within 1e-9, reaches 95 % on the held-out digits,
/// and the accuracy it reports is the test's own count.
#[test]
fn an_mlp_trains_on_the_ten_digits_exactly() {
    let text = shipped("mlp-digits.toml");
    let (run, dir, _, sets) = train("digits-mlp", &text, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let got = final_theta(&dir);
    let want = job_reference(&text, &sets);
    let diff = outrun_workloads::metrics::relative_diff(&got, &want);
    assert!(diff <= 1e-9, "θ differs from the serial reference by {diff:e}");
    let (x, y) = read(&format!("{}/../../data/digits-test.libsvm", env!("CARGO_MANIFEST_DIR")));
    let right = x.iter().zip(&y).filter(|(row, &label)| mlp_class(&want, &[64, 128, 10], row) as f64 == label).count();
    let reported: f64 = iterations(&dir).last().unwrap()["test_accuracy"].parse().unwrap();
    assert!((reported - right as f64 / x.len() as f64).abs() < 1e-6, "reported {reported}, counted {right}");
    assert!(reported >= 0.95, "test accuracy {reported}");
    eprintln!("mlp-digits: θ within {diff:.1e} of the reference, test accuracy {reported}");
}

/// configs/rff-digits.toml through mpirun: kernel regression on random Fourier features is exact
/// under gradient coding and reaches scikit-learn's accuracy with the same q, σ and ridge
/// penalty (RBFSampler + Ridge, mean of 10 feature draws: tests/data/rff_sklearn.txt, written by
/// scripts/oracles/rff_sklearn.py) within 1 point.
#[test]
fn rff_kernel_regression_reaches_scikit_learns_accuracy() {
    let text = shipped("rff-digits.toml");
    let (run, dir, _, sets) = train("digits-rff", &text, &[]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&dir), &job_reference(&text, &sets));
    assert!(diff <= 1e-9, "θ differs from the serial reference by {diff:e}");
    let oracle = include_str!("data/rff_sklearn.txt");
    let sklearn: f64 = oracle.lines().nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let reported: f64 = iterations(&dir).last().unwrap()["test_accuracy"].parse().unwrap();
    assert!((reported - sklearn).abs() <= 0.01, "outrun {reported} vs scikit-learn {sklearn}");
    eprintln!("rff-digits: test accuracy {reported}, scikit-learn {sklearn}; θ within {diff:.1e}");
}

/// configs/mlp-mnist.toml through mpirun (60 iterations): the 784-200-200-10 network on the MNIST
/// subset, read from gzip IDX files, under CodedReduce equals the serial reference within 1e-9,
/// and the accuracy it reports is the test's own count on the held-out images.
#[test]
fn a_784_200_200_10_network_trains_on_mnist_idx_files_exactly() {
    let text = shipped("mlp-mnist.toml");
    let (run, dir, _, sets) = train("mnist-mlp", &text, &["run.iterations=60"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let want = job_reference(&text, &sets);
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&dir), &want);
    assert!(diff <= 1e-9, "θ differs from the serial reference by {diff:e}");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data");
    let (dims, pixels) = read_idx(&format!("{data}/mnist-5k-test-images.idx.gz"));
    let (_, labels) = read_idx(&format!("{data}/mnist-5k-test-labels.idx.gz"));
    assert_eq!(dims, [1000, 28, 28]);
    let right = (0..1000)
        .filter(|&i| {
            let x: Vec<f64> = pixels[i * 784..(i + 1) * 784].iter().map(|&b| f64::from(b) / 255.0).collect();
            mlp_class(&want, &[784, 200, 200, 10], &x) == labels[i] as usize
        })
        .count();
    let rows = iterations(&dir);
    let reported: f64 = rows.last().unwrap()["test_accuracy"].parse().unwrap();
    assert!((reported - right as f64 / 1000.0).abs() < 1e-6, "reported {reported}, counted {right}/1000");
    assert_eq!(rows[18]["test_accuracy"], "", "scored every 20 iterations only");
    assert!(!rows[19]["test_accuracy"].is_empty());
    assert!(reported > 0.8, "test accuracy {reported} after 60 iterations");
    eprintln!("mlp-mnist: θ within {diff:.1e} of the reference, test accuracy {reported} after 60 iterations");
}

/// Non-IID parts (`data.order = "by-label"`): the rows sorted by label before the allocation
/// cuts them, so each worker of gradient coding holds a few digits only; still exact.
#[test]
fn rows_sorted_by_label_give_non_iid_parts_and_stay_exact() {
    let text = shipped("softmax-digits.toml");
    let sets = [
        "data.order=by-label",
        "run.iterations=30",
        "scheme.kind=gc-cyclic",
        "scheme.n=",
        "scheme.layers=",
        "scheme.code=",
        "scheme.workers=10",
        "scheme.s=1",
        "stragglers.workers=[3]",
    ];
    let (run, dir, _, all) = train("digits-by-label", &text, &sets);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&dir), &job_reference(&text, &all));
    assert!(diff <= 1e-9, "θ differs from the serial reference by {diff:e}");
    // worker 1's first part is the first tenth of the sorted rows: zeros and ones only
    let cfg = outrun_config::parse(&text, &all).unwrap();
    let plan = outrun_workloads::resolve(&cfg).unwrap();
    let (_, y) = read(&format!("{}/../../data/digits-train.libsvm", env!("CARGO_MANIFEST_DIR")));
    let mut sorted: Vec<usize> = (0..y.len()).collect();
    sorted.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
    let first: Vec<f64> = plan.nodes[1].parts[0].points().map(|(i, _)| y[sorted[i]]).collect();
    assert!(first.iter().all(|&c| c <= 1.0), "worker 1's part holds classes {first:?}");
}

/// The digits as a CSV file (written here from the LIBSVM file: a header, the label, 64 pixels)
/// train through mpirun to the LIBSVM run's reference.
#[test]
fn a_csv_file_trains_like_the_same_data_in_libsvm() {
    let dir = tempdir("digits-csv");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut csv = String::from("digit");
    (1..=64).for_each(|k| csv.push_str(&format!(",px{k}")));
    csv.push('\n');
    let (x, y) = read(&format!("{root}/data/digits-train.libsvm"));
    for (row, label) in x.iter().zip(&y) {
        csv.push_str(&label.to_string());
        row.iter().for_each(|v| csv.push_str(&format!(",{v}")));
        csv.push('\n');
    }
    let path = dir.join("digits.csv");
    std::fs::write(&path, csv).unwrap();
    let text = shipped("softmax-digits.toml");
    let sets = [
        "data.kind=csv".to_string(),
        format!("data.path={}", path.display()),
        "data.test_path=".into(),
        "run.iterations=20".into(),
    ];
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (run, out, _, all) = train("digits-csv", &text, &refs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let libsvm: Vec<String> = vec!["data.test_path=".into(), "run.iterations=20".into()];
    let want = job_reference(&text, &libsvm);
    assert_eq!(job_reference(&text, &all), want, "the CSV file is the LIBSVM file's data");
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&out), &want);
    assert!(diff <= 1e-9, "θ differs from the LIBSVM reference by {diff:e}");
    // the same file gzipped (pandas' `.csv.gz`), read as it is
    let gz = dir.join("digits.csv.gz");
    let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &std::fs::read(&path).unwrap()).unwrap();
    e.finish().unwrap();
    let sets = [sets[0].clone(), format!("data.path={}", gz.display()), sets[2].clone(), sets[3].clone()];
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (run, out, _, _) = train("digits-csv-gz", &text, &refs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&out), &want);
    assert!(diff <= 1e-9, "the gzipped file's θ differs from the LIBSVM reference by {diff:e}");
}

/// After `outrun check`, every rank reads its rows from the binary rows cache the check's parse
/// wrote, not from the text: a file changed in its middle with its size, ends and time kept
/// (a change the cache cannot see) still trains on the rows the check read, and
/// `OUTRUN_NO_CACHE=1` reads the text.
#[test]
fn ranks_read_their_rows_from_the_cache_the_check_wrote() {
    let dir = tempdir("rows-cache");
    // 4000 rows, ~150 KB: rows 1900..2100 lie outside the 64 KiB ends the cache's key hashes
    let line = |r: usize, first: &str| {
        let v = |m: usize, step: f64| (r % m) as f64 * step;
        format!("{:.3} 1:{first} 2:{:.3} 3:{:.3} 4:{:.3}\n", v(7, 0.5), v(5, 0.1), v(3, 0.2), v(11, 0.05))
    };
    let text = |middle: &str| -> String {
        (0..4000).map(|r| line(r, if (1900..2100).contains(&r) { middle } else { "0.250" })).collect()
    };
    let (data, orig) = (dir.join("data.libsvm"), dir.join("orig.libsvm"));
    std::fs::write(&data, text("0.250")).unwrap();
    std::fs::write(&orig, text("0.250")).unwrap();
    let ends = 64 * 1024;
    let middle: usize = (0..1900).map(|r| line(r, "0.250").len()).sum();
    assert!(middle > ends && middle + 200 * line(0, "0.250").len() < text("0.250").len() - ends);
    let cache = dir.join("cache");
    let config = |path: &std::path::Path| {
        format!("[run]\nname='rows'\nseed=1\niterations=10\n[data]\nkind='libsvm'\npath='{}'\n[model]\nloss='least-squares'\nlr=0.1\n[scheme]\nkind='gc-cyclic'\nworkers=4\ns=1\n", path.display())
    };
    let cfg = write_config(&dir, &config(&data));
    let checked =
        std::process::Command::new(bin()).env("XDG_CACHE_HOME", &cache).arg("check").arg(&cfg).output().unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
    // the middle rows change; the ends, the size and the time do not
    let mtime = std::fs::metadata(&data).unwrap().modified().unwrap();
    std::fs::write(&data, text("0.750")).unwrap();
    std::fs::File::options().write(true).open(&data).unwrap().set_modified(mtime).unwrap();
    let train = |env: &[(&str, &str)], tag: &str| {
        let _lock = mpi_lock();
        let out = dir.join(tag);
        let sets = vec![format!("run.out_dir={}", out.display())];
        let run = mpirun_env(5, &cfg, &sets, env, std::time::Duration::from_secs(120));
        assert_eq!(run.code, Some(0), "{tag}: {}", run.stderr);
        final_theta(&run_dir(&out))
    };
    let cache_env = cache.display().to_string();
    let from_cache = train(&[("XDG_CACHE_HOME", &cache_env)], "cached");
    let from_text = train(&[("XDG_CACHE_HOME", &cache_env), ("OUTRUN_NO_CACHE", "1")], "text");
    let last = |path: &std::path::Path| reference(&config(path), &[]).pop().unwrap();
    let (want_orig, want_altered) = (last(&orig), last(&data));
    let diff = outrun_workloads::metrics::relative_diff;
    assert!(diff(&want_orig, &want_altered) > 1e-3, "the change moves θ");
    let diff_cache = diff(&from_cache, &want_orig);
    assert!(diff_cache <= 1e-9, "the ranks read the text, not the cached rows: {diff_cache:e} from the checked data");
    let diff = diff(&from_text, &want_altered);
    assert!(diff <= 1e-9, "OUTRUN_NO_CACHE=1 still read the cache: {diff:e} from the file's data");
}

/// The user's file as it comes (issue 44): `;` between fields, the label last and a word
/// (`digit-3`), a header — and a held-out file like it — trains through mpirun without
/// preprocessing to the LIBSVM run's reference, and the label map is in plan.json and
/// `outrun plan`.
#[test]
fn a_csv_with_word_labels_last_and_semicolons_trains_without_preprocessing() {
    let dir = tempdir("digits-words");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let write = |name: &str, libsvm: &str| {
        let mut csv: String = (1..=64).map(|k| format!("px{k};")).collect::<String>() + "kind\n";
        let (x, y) = read(&format!("{root}/data/{libsvm}"));
        for (row, label) in x.iter().zip(&y) {
            row.iter().for_each(|v| csv.push_str(&format!("{v};")));
            csv.push_str(&format!("digit-{label}\n"));
        }
        let path = dir.join(name);
        std::fs::write(&path, csv).unwrap();
        path
    };
    let (train_csv, test_csv) = (write("train.csv", "digits-train.libsvm"), write("test.csv", "digits-test.libsvm"));
    let text = shipped("softmax-digits.toml");
    let sets = [
        "data.kind=csv".to_string(),
        format!("data.path={}", train_csv.display()),
        format!("data.test_path={}", test_csv.display()),
        "data.delimiter=\";\"".into(),
        "data.label_column=\"kind\"".into(),
        "data.labels=\"auto\"".into(),
        "run.iterations=20".into(),
    ];
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (run, out, cfg, all) = train("digits-words", &text, &refs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let want = job_reference(&text, &["run.iterations=20".to_string()]);
    assert_eq!(job_reference(&text, &all), want, "the word-labelled CSV is the LIBSVM file's data");
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&out), &want);
    assert!(diff <= 1e-9, "θ differs from the LIBSVM reference by {diff:e}");
    let names: Vec<String> = (0..10).map(|k| format!("digit-{k}")).collect();
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["job"]["label_names"], serde_json::json!(names));
    assert!(summary(&out)["final_test_accuracy"].as_f64().is_some_and(|a| a > 0.8), "{}", summary(&out));
    let mut args = vec!["plan".to_string(), cfg.display().to_string()];
    all.iter().for_each(|s| args.extend(["--set".to_string(), s.clone()]));
    let p = outrun(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(p.stdout.contains("labels (data.labels = \"auto\"): `digit-0` → 0, `digit-1` → 1,"), "{}", p.stdout);
}

/// A LIBSVM file that counts features from 0 (issue 44), and its held-out file, train through
/// mpirun with `data.index_base = 0` to the 1-based file's reference θ.
#[test]
fn a_zero_based_libsvm_file_trains_like_its_one_based_original() {
    let dir = tempdir("digits-base0");
    let shift = |name: &str| {
        let path = rewrite_digits(&dir, name, |i, v| format!("{}:{v}", i - 1));
        let original = std::fs::read_to_string(format!("{}/../../data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        assert_ne!(std::fs::read_to_string(&path).unwrap(), original, "the copy counts from 0");
        path
    };
    let (train_file, test_file) = (shift("digits-train.libsvm"), shift("digits-test.libsvm"));
    let text = shipped("softmax-digits.toml");
    let sets = [
        format!("data.path={}", train_file.display()),
        format!("data.test_path={}", test_file.display()),
        "data.index_base=0".into(),
        "run.iterations=20".into(),
    ];
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (run, out, _, all) = train("digits-base0", &text, &refs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let want = job_reference(&text, &["run.iterations=20".to_string()]);
    assert_eq!(job_reference(&text, &all), want, "the 0-based file holds the 1-based file's data");
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&out), &want);
    assert!(diff <= 1e-9, "θ differs from the 1-based reference by {diff:e}");
    assert!(summary(&out)["final_test_accuracy"].as_f64().is_some_and(|a| a > 0.8), "{}", summary(&out));
}

/// `data.order = "shuffle"` (issue 44): the digits written sorted by class, shuffled from the
/// seed, give IID parts (worker 1's first part spans most classes, where the file's order gives
/// one or two) and train through mpirun to the serial reference.
#[test]
fn a_file_sorted_by_class_shuffled_gives_iid_parts_and_stays_exact() {
    let dir = tempdir("digits-shuffle");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let text = std::fs::read_to_string(format!("{root}/data/digits-train.libsvm")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let class = |l: &str| l.split_whitespace().next().unwrap().parse::<f64>().unwrap();
    lines.sort_by(|a, b| class(a).total_cmp(&class(b)));
    let sorted = dir.join("sorted.libsvm");
    std::fs::write(&sorted, lines.join("\n") + "\n").unwrap();
    let cfg_text = shipped("softmax-digits.toml");
    let sets = [
        format!("data.path={}", sorted.display()),
        "data.order=shuffle".into(),
        "run.iterations=30".into(),
        "scheme.kind=gc-cyclic".into(),
        "scheme.n=".into(),
        "scheme.layers=".into(),
        "scheme.code=".into(),
        "scheme.workers=10".into(),
        "scheme.s=1".into(),
        "stragglers.workers=[3]".into(),
    ];
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (run, out, _, all) = train("digits-shuffle", &cfg_text, &refs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&out), &job_reference(&cfg_text, &all));
    assert!(diff <= 1e-9, "θ differs from the serial reference by {diff:e}");
    let cfg = outrun_config::parse(&cfg_text, &all).unwrap();
    let plan = outrun_workloads::resolve(&cfg).unwrap();
    let y: Vec<f64> = lines.iter().map(|l| class(l)).collect();
    let classes = |order: Option<Vec<usize>>| {
        let mut c: Vec<i64> =
            plan.nodes[1].parts[0].points().map(|(i, _)| y[order.as_ref().map_or(i, |o| o[i])] as i64).collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    };
    let shape = outrun_workloads::Shape { samples: y.len(), features: 64 };
    let order =
        outrun_workloads::data::row_order(&cfg.gd().data, cfg.run.seed, cfg.gd().model.labels(), shape).unwrap();
    assert!(order.is_some(), "shuffled");
    assert!(classes(order) >= 7, "worker 1's part is an IID sample of all ten classes");
    assert!(classes(None) <= 2, "in the file's order it holds one or two");
}

/// `data.standardize` (issue 44): the digits with features scaled from 1e-3 to 1e4 (and their
/// held-out file alike) train through mpirun to the θ of the unscaled digits standardised —
/// standardising undoes any per-feature scale — and to the serial reference.
#[test]
fn standardized_features_spanning_seven_orders_train_like_the_original() {
    let dir = tempdir("digits-standardize");
    let scale = |j: usize| 10f64.powi((j % 8) as i32 - 3);
    let scaled =
        |name: &str| rewrite_digits(&dir, name, |j, v| format!("{j}:{:e}", v.parse::<f64>().unwrap() * scale(j)));
    let (train_file, test_file) = (scaled("digits-train.libsvm"), scaled("digits-test.libsvm"));
    let text = shipped("softmax-digits.toml");
    let sets = [
        format!("data.path={}", train_file.display()),
        format!("data.test_path={}", test_file.display()),
        "data.standardize=true".into(),
        "run.iterations=20".into(),
    ];
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (run, out, _, all) = train("digits-standardize", &text, &refs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let got = final_theta(&out);
    let diff = outrun_workloads::metrics::relative_diff(&got, &job_reference(&text, &all));
    assert!(diff <= 1e-9, "θ differs from the serial reference by {diff:e}");
    let original = job_reference(&text, &["data.standardize=true".to_string(), "run.iterations=20".to_string()]);
    let diff = outrun_workloads::metrics::relative_diff(&got, &original);
    assert!(diff <= 1e-8, "θ differs from the unscaled digits standardised by {diff:e}");
    assert!(summary(&out)["final_test_accuracy"].as_f64().is_some_and(|a| a > 0.9), "{}", summary(&out));
    assert!(!run.stderr.contains("diverged"), "{}", run.stderr);
    // the same files without it: the loss blows up, and the run says so and what to do
    let raw: Vec<&str> = refs.iter().copied().filter(|s| !s.starts_with("data.standardize")).collect();
    let (run, _out, _, _) = train("digits-unscaled", &text, &raw);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("warning: the loss diverged") && run.stderr.contains("data.standardize = true"),
        "{}",
        run.stderr
    );
}

/// `data.test_fraction` (issue 44): one file, no held-out file; a fifth of the digits is held
/// out from the seed and the run (through mpirun) trains on the rest to the serial reference of
/// the same split written as two files, and reports its accuracy on the held-out fifth.
#[test]
fn a_test_fraction_holds_out_rows_and_trains_on_the_rest() {
    let dir = tempdir("digits-split");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let text = shipped("softmax-digits.toml");
    let sets = ["data.test_path=".to_string(), "data.test_fraction=0.2".into(), "run.iterations=20".into()];
    let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
    let (run, out, _, all) = train("digits-split", &text, &refs);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // the same split, written as a training file and a held-out file
    let lines: Vec<String> = std::fs::read_to_string(format!("{root}/data/digits-train.libsvm"))
        .unwrap()
        .lines()
        .map(|l| l.to_string() + "\n")
        .collect();
    let cfg = outrun_config::parse(&text, &all).unwrap();
    let (train_rows, held) = outrun_workloads::data::split(&cfg.gd().data, cfg.run.seed, lines.len()).unwrap();
    assert_eq!(held.len(), (lines.len() as f64 * 0.2).round() as usize);
    let write = |name: &str, rows: &[usize]| {
        let path = dir.join(name);
        std::fs::write(&path, rows.iter().map(|&i| lines[i].as_str()).collect::<String>()).unwrap();
        path
    };
    let (a, b) = (write("train.libsvm", &train_rows), write("held.libsvm", &held));
    let explicit =
        [format!("data.path={}", a.display()), format!("data.test_path={}", b.display()), "run.iterations=20".into()];
    let diff = outrun_workloads::metrics::relative_diff(&final_theta(&out), &job_reference(&text, &explicit));
    assert!(diff <= 1e-9, "θ differs from the explicit split's serial reference by {diff:e}");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["samples"].as_u64(), Some(train_rows.len() as u64), "the plan allocates the training rows");
    assert!(summary(&out)["final_test_accuracy"].as_f64().is_some_and(|a| a > 0.8), "{}", summary(&out));
    // the held-out loss column is in the header as in the rows (it was in the rows only)
    let csv = std::fs::read_to_string(out.join("iterations.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(head.contains(&"test_loss"), "{head:?}");
    assert!(csv.lines().all(|l| l.split(',').count() == head.len()), "a row and the header differ in length");
    // a file of one row cannot be split: one line naming the key, before MPI
    let one = write("one.libsvm", &train_rows[..1]);
    let cfg = dir.join("one.toml");
    std::fs::write(&cfg, &text).unwrap();
    let r = outrun(&[
        "check",
        cfg.to_str().unwrap(),
        "--set",
        &format!("data.path={}", one.display()),
        "--set",
        "data.test_path=",
        "--set",
        "data.test_fraction=0.2",
    ]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("data.test_fraction = 0.2: the file has 1 row(s)"), "{}", r.stderr);
}

/// `data.missing = "mean"` (issue 44): the digits as a CSV with every 7th value blanked (empty
/// or `NA`) train through mpirun to the serial reference of the same CSV with the blanks filled
/// by the column means this test computes itself — over every row, and with
/// `data.test_fraction` over the training rows only (the held-out rows' values do not leak into
/// the fill).
#[test]
fn missing_values_filled_with_column_means_train_like_the_filled_file() {
    let dir = tempdir("digits-missing");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let (x, y) = read(&format!("{root}/data/digits-train.libsvm"));
    let blank = |i: usize, j: usize| (i * 64 + j) % 7 == 3;
    let p = x[0].len();
    // each column's mean over the values the given rows have
    let means = |rows: &[usize]| -> Vec<f64> {
        (0..p)
            .map(|j| {
                let kept: Vec<f64> = rows.iter().filter(|&&i| !blank(i, j)).map(|&i| x[i][j]).collect();
                kept.iter().sum::<f64>() / kept.len() as f64
            })
            .collect()
    };
    let write = |name: &str, fill: Option<&[f64]>| {
        let mut csv = String::new();
        for (i, row) in x.iter().enumerate() {
            csv.push_str(&format!("{}", y[i]));
            for (j, v) in row.iter().enumerate() {
                match (blank(i, j), fill) {
                    (true, Some(m)) => csv.push_str(&format!(",{:e}", m[j])),
                    (true, None) => csv.push_str(if i % 2 == 0 { "," } else { ",NA" }),
                    (false, _) => csv.push_str(&format!(",{v}")),
                }
            }
            csv.push('\n');
        }
        let path = dir.join(name);
        std::fs::write(&path, csv).unwrap();
        path
    };
    let all: Vec<usize> = (0..x.len()).collect();
    let holes = write("holes.csv", None);
    let text = shipped("softmax-digits.toml");
    let csv = |path: &std::path::Path, more: &[&str]| -> Vec<String> {
        let mut sets =
            vec!["data.kind=csv".to_string(), format!("data.path={}", path.display()), "data.test_path=".into()];
        sets.extend(["run.iterations=20".to_string()].into_iter().chain(more.iter().map(|s| s.to_string())));
        sets
    };
    // the held-out rows of data.test_fraction = 0.2 for the config's run.seed
    let cfg = outrun_config::parse(&text, &csv(&holes, &["data.test_fraction=0.2"])).unwrap();
    let (train_rows, _) = outrun_workloads::data::split(&cfg.gd().data, cfg.run.seed, x.len()).unwrap();
    let (whole, training) = (means(&all), means(&train_rows));
    assert!(whole.iter().zip(&training).any(|(a, b)| (a - b).abs() > 1e-3), "the split should move some mean");
    for (tag, more, fill) in
        [("digits-missing", &[][..], &whole), ("digits-missing-split", &["data.test_fraction=0.2"][..], &training)]
    {
        let with_holes = csv(&holes, &[&["data.missing=mean"][..], more].concat());
        let refs: Vec<&str> = with_holes.iter().map(String::as_str).collect();
        let (run, out, _, _) = train(tag, &text, &refs);
        assert_eq!(run.code, Some(0), "{tag}: {}", run.stderr);
        let want = job_reference(&text, &csv(&write(&format!("{tag}-filled.csv"), Some(fill)), more));
        let diff = outrun_workloads::metrics::relative_diff(&final_theta(&out), &want);
        assert!(diff <= 1e-9, "{tag}: θ differs from the filled file's reference by {diff:e}");
    }
    // without data.missing the blanks are refused, naming the first one and the key
    let c = outrun(&[
        "check",
        &write_config(&dir, &text).display().to_string(),
        "--set",
        "data.kind=csv",
        "--set",
        &format!("data.path={}", holes.display()),
        "--set",
        "data.test_path=",
    ]);
    assert_eq!(c.code, Some(2), "{}", c.stderr);
    assert!(c.stderr.contains("holds no value (data.missing = \"zero\" or \"mean\" fills it)"), "{}", c.stderr);
}
