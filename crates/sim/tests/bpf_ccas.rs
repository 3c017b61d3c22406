//! fatpipe's BPF ports (bpf/cca, compiled by fatpipe-bpfports) run in the
//! simulator: each loads, and on the golden paths (100 Mbit/s, 40 ms, 1
//! BDP buffer, two streams, with and without 1e-3 loss) the port agrees
//! with the simulator's native algorithm of the same name.

mod common;

use common::Plan;
use fatpipe_sim::bpf::Catalog;
use fatpipe_sim::scenario::Scenario;
use fatpipe_sim::trace::RunResult;
use serde_json::json;

/// The loss-based ports and their native twins (DCTCP needs a marking
/// path: its own test).
const PAIRS: [(&str, &str); 11] = [
    ("fp_reno", "reno"),
    ("fp_cubic", "cubic"),
    ("htcp", "htcp"),
    ("bic", "bic"),
    ("highspeed", "highspeed"),
    ("scalable", "scalable"),
    ("westwood", "westwood"),
    ("illinois", "illinois"),
    ("vegas", "vegas"),
    ("yeah", "yeah"),
    ("nv", "nv"),
];

fn port(name: &str) -> &'static [u8] {
    fatpipe_bpfports::find(name).unwrap_or_else(|| panic!("port {name} not built: {}", fatpipe_bpfports::NOT_BUILT)).object
}

fn plan(cc: &str, lossy: bool) -> Plan {
    Plan::new(cc, 2, 100e6, 0.040, 4.0)
        .set("seed", json!(20261122))
        .set("sample_interval_s", json!(0.1))
        .set("loss", json!(if lossy { 1e-3 } else { 0.0 }))
        .flow("mss_bytes", json!(1448))
}

fn run_bpf(name: &str, lossy: bool) -> RunResult {
    let key = format!("bpf:{name}");
    let mut catalog = Catalog::default();
    catalog.add(&key, port(name)).unwrap_or_else(|e| panic!("{e}"));
    Scenario::from_json_with(&plan(&key, lossy).json(), catalog).unwrap_or_else(|e| panic!("{e}")).run()
}

fn goodput(r: &RunResult) -> f64 {
    let s = &r.series;
    let last = |stream: i64| (0..s.len()).rev().find(|&i| s.stream[i] == stream).map(|i| s.delivered_bytes[i]).unwrap_or(0);
    (last(0) + last(1)) as f64 * 8.0 / 4.0
}

#[test]
fn every_port_loads() {
    for p in fatpipe_bpfports::PORTS {
        let mut c = Catalog::default();
        c.add(&format!("bpf:{}", p.name), p.object).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(c.program(&format!("bpf:{}", p.name)).unwrap().name, p.name);
    }
}

#[test]
fn ports_agree_with_the_native_algorithms_on_the_golden_paths() {
    let mut report = Vec::new();
    for (bpf, native) in PAIRS {
        for lossy in [false, true] {
            let b = goodput(&run_bpf(bpf, lossy));
            let n = goodput(&plan(native, lossy).run());
            report.push(format!("{bpf:>10} lossy={lossy:<5} bpf {:8.2} native {:8.2} Mbit/s ({:+.2} %)", b / 1e6, n / 1e6, (b / n - 1.0) * 100.0));
            // The same code on the same connection: measured within 0.01 %;
            // 0.5 % leaves room for a jiffy's rounding, not for a rule.
            assert!((b / n - 1.0).abs() < 0.005, "{}", report.join("\n"));
        }
    }
    println!("{}", report.join("\n"));
}

#[test]
fn a_port_runs_its_own_code_on_the_connection() {
    use fatpipe_sim::cc::{ConnState, CongestionControl};
    let mut c = Catalog::default();
    c.add("bpf:fp_reno", port("fp_reno")).unwrap();
    let mut cc = c.build("bpf:fp_reno", 1).unwrap();
    let mut tp = ConnState::new(1448);
    tp.cwnd_limited_flag = true;
    cc.init(&mut tp);
    cc.cong_avoid(&mut tp, 3);
    assert_eq!(tp.snd_cwnd, 13, "slow start: cwnd 10 + 3 acked");
    tp.snd_ssthresh = 13;
    for _ in 0..13 {
        cc.cong_avoid(&mut tp, 1);
    }
    assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (14, 0), "one more segment per window acked");
    tp.snd_cwnd = 40;
    assert_eq!(cc.ssthresh(&tp), 20, "tcp_reno_ssthresh: half of cwnd");
    assert_eq!(cc.name(), "fp_reno");
}

#[test]
fn the_dctcp_port_agrees_with_the_native_dctcp_on_a_marking_path() {
    // 100 Mbit/s, 10 ms, CE marks above 20 packets (DCTCP's K), 4 BDP of
    // buffer: the port reads the marks through tp->delivered_ce as
    // dctcp_update_alpha() does.
    let plan = |cc: &str| {
        Plan::new(cc, 2, 100e6, 0.010, 2.0)
            .set("buffer_bytes", json!(4 * 125_000))
            .set("sample_interval_s", json!(0.1))
            .set("aqm", json!({"kind": "ce_threshold", "k_packets": 20}))
            .flow("mss_bytes", json!(1448))
    };
    let mut catalog = Catalog::default();
    catalog.add("bpf:dctcp", port("dctcp")).unwrap();
    let bpf = Scenario::from_json_with(&plan("bpf:dctcp").json(), catalog).unwrap().run();
    let native = plan("dctcp").run();
    assert!(bpf.path.ce_marks > 0 && native.path.ce_marks > 0, "{} {}", bpf.path.ce_marks, native.path.ce_marks);
    let (b, n) = (goodput(&bpf) * 2.0, goodput(&native) * 2.0); // goodput() divides by 4 s
    println!("dctcp: bpf {:.2} native {:.2} Mbit/s, CE marks {} vs {}", b / 1e6, n / 1e6, bpf.path.ce_marks, native.path.ce_marks);
    assert!((b / n - 1.0).abs() < 0.005, "bpf {b} native {n}");
    // And hook by hook.
    let mut catalog = Catalog::default();
    catalog.add("bpf:dctcp", port("dctcp")).unwrap();
    catalog.lockstep_with("bpf:dctcp", "dctcp");
    Scenario::from_json_with(&plan("bpf:dctcp").json(), catalog).unwrap().run();
}

#[test]
fn ports_run_in_lockstep_with_the_native_algorithms() {
    // Hook by hook on the golden paths: the same writes and answers.
    for (bpf, native) in PAIRS {
        for lossy in [false, true] {
            let key = format!("bpf:{bpf}");
            let mut catalog = Catalog::default();
            catalog.add(&key, port(bpf)).unwrap();
            catalog.lockstep_with(&key, native);
            Scenario::from_json_with(&plan(&key, lossy).json(), catalog).unwrap().run();
        }
    }
}

/// Compiles the test program `tests/bpf/NAME.bpf.c` as fatpipe-ccaload
/// --compile does (the ports' clang arguments and headers).
fn compile_test_program(name: &str) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("fatpipe-sim-bpf-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(dir.join("bpf")).unwrap();
    for (file, bytes) in fatpipe_bpfports::HEADERS {
        std::fs::write(dir.join(file), bytes).unwrap();
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bpf").join(format!("{name}.bpf.c"));
    let out = dir.join(format!("{name}.o"));
    let status = std::process::Command::new(std::env::var("CLANG").unwrap_or_else(|_| "clang".into()))
        .args(fatpipe_bpfports::CLANG_ARGS)
        .arg(format!("-I{}", dir.display()))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang runs (scripts/install.sh installs it)");
    assert!(status.success(), "clang failed on {}", src.display());
    let elf = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    elf
}

#[test]
fn a_program_made_of_the_kernels_bbr_kfuncs_runs_as_the_simulators_bbr() {
    // cong_control with bbr_main: cwnd, pacing rate and every answer as the
    // native BBR's, hook by hook, on both golden paths.
    let elf = compile_test_program("kbbr");
    for lossy in [false, true] {
        let mut catalog = Catalog::default();
        catalog.add("bpf:kbbr", &elf).unwrap();
        catalog.lockstep_with("bpf:kbbr", "bbr");
        let r = Scenario::from_json_with(&plan("bpf:kbbr", lossy).json(), catalog).unwrap().run();
        let native = plan("bbr", lossy).run();
        assert_eq!(goodput(&r), goodput(&native), "lossy={lossy}");
    }
}
