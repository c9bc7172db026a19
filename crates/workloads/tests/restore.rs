//! A checkpoint's state is taken as the run that wrote it left it, or refused in one line: the
//! optimizer goes on as it was (Adam's moments are not SGD's velocity), each vector once.

fn job(optimizer: &str) -> Box<dyn outrun_workloads::Job> {
    let text = format!(
        "[run]\nname='r'\niterations=4\n[data]\nkind='linear-synthetic'\nsamples=60\nfeatures=3\n\
         [model]\nloss='least-squares'\nlr=0.1\noptimizer='{optimizer}'\n[scheme]\nkind='umw'\nworkers=2\n"
    );
    let cfg = outrun_config::parse(&text, &[]).unwrap();
    outrun_workloads::job(&outrun_workloads::resolve(&cfg).unwrap())
}

fn restore(optimizer: &str, vectors: &[(&str, Vec<f64>)]) -> Result<(), String> {
    let v: Vec<(String, Vec<f64>)> = vectors.iter().map(|(n, v)| (n.to_string(), v.clone())).collect();
    outrun_workloads::restore(job(optimizer).as_mut(), &v).map_err(|e| e.to_string())
}

#[test]
fn a_checkpoint_goes_on_with_the_optimizer_that_wrote_it() {
    let theta = ("theta", vec![0.1, 0.2, 0.3]);
    let m = ("velocity", vec![0.01, -0.02, 0.03]);
    let v = ("second_moment", vec![1e-4, 2e-4, 0.0]);
    // as each optimizer writes it
    restore("adam", &[theta.clone(), m.clone(), v.clone()]).unwrap();
    restore("adamw", &[theta.clone(), m.clone(), v.clone()]).unwrap();
    restore("sgd", &[theta.clone(), m.clone()]).unwrap();
    restore("sgd", &[theta.clone(), ("velocity", vec![])]).unwrap();
    // another optimizer's
    let e = restore("sgd", &[theta.clone(), m.clone(), v.clone()]).unwrap_err();
    assert!(e.contains("written with model.optimizer = \"adam\" or \"adamw\", this config has \"sgd\""), "{e}");
    let e = restore("adamw", &[theta.clone(), m.clone()]).unwrap_err();
    assert!(
        e.contains("written with model.optimizer = \"sgd\", this config has \"adamw\"") && e.contains("init_path"),
        "{e}"
    );
    // a second moment no Adam step leaves
    let e = restore("adam", &[theta.clone(), m.clone(), ("second_moment", vec![1e-4, -1e-9, 0.0])]).unwrap_err();
    assert!(e.contains("second_moment[1] = -0.000000001"), "{e}");
    // a vector twice: which one would be meant?
    let e = restore("sgd", &[theta.clone(), m.clone(), ("theta", vec![0.0; 3])]).unwrap_err();
    assert!(e.contains("has `theta` twice"), "{e}");
}
