//! The sysctls a conformance script may set (packetdrill suites set them
//! in a `defaults.sh` and per script), and what the simulated socket does
//! with each: some it follows, some it accepts because they do not touch
//! what it models, and for the rest only Linux's default value is modelled
//! (another value is refused, naming the key and the value it models).

/// Values of the net.ipv4 sysctls the scripted connection reads, with
/// Linux's defaults (Documentation/networking/ip-sysctl.rst).
#[derive(Clone, Debug, PartialEq)]
pub struct Sysctls {
    /// net.ipv4.tcp_rmem: min, default, max receive buffer (bytes).
    pub tcp_rmem: [u64; 3],
    /// net.ipv4.tcp_wmem: min, default, max send buffer (bytes).
    pub tcp_wmem: [u64; 3],
    /// net.ipv4.tcp_timestamps (RFC 7323 timestamps offered/accepted).
    pub tcp_timestamps: bool,
    /// net.ipv4.tcp_sack.
    pub tcp_sack: bool,
    /// net.ipv4.tcp_window_scaling.
    pub tcp_window_scaling: bool,
    /// net.ipv4.tcp_ecn: 0 off, 1 request and accept, 2 accept only.
    pub tcp_ecn: u8,
    /// net.ipv4.tcp_congestion_control: the default CCA of new sockets.
    pub tcp_congestion_control: String,
    /// net.ipv4.tcp_slow_start_after_idle.
    pub tcp_slow_start_after_idle: bool,
    /// net.ipv4.tcp_min_tso_segs: tcp_tso_autosize()'s floor.
    pub tcp_min_tso_segs: u32,
    /// net.core.rmem_max: bounds the window scale (tcp_select_initial_window()).
    pub rmem_max: u64,
    /// Not a sysctl: the test device's root qdisc (`tc qdisc ... root
    /// KIND`, key `dev.root_qdisc`). fq paces every flow at its
    /// sk_pacing_rate (SK_PACING_FQ); the plain FIFOs hold nothing back.
    pub root_qdisc_paces: bool,
}

impl Default for Sysctls {
    fn default() -> Self {
        Sysctls {
            tcp_rmem: [4096, 131_072, 6_291_456],
            tcp_wmem: [4096, 16_384, 4_194_304],
            tcp_timestamps: true,
            tcp_sack: true,
            tcp_window_scaling: true,
            tcp_ecn: 2,
            tcp_congestion_control: "cubic".to_string(),
            tcp_slow_start_after_idle: true,
            rmem_max: 212_992,
            tcp_min_tso_segs: crate::cc::TCP_MIN_TSO_SEGS,
            root_qdisc_paces: false,
        }
    }
}

/// Sysctls accepted whatever their value: they decide nothing the
/// simulated sender models (SYN retries, Fast Open, syncookies, the
/// removed FACK switch, the AccECN option, notsent_lowat without polling,
/// tcp_metrics, the DSACK receiver side, ...).
const NO_EFFECT: &[&str] = &[
    "net.ipv4.tcp_syn_retries",
    "net.ipv4.tcp_synack_retries",
    "net.ipv4.tcp_fastopen",
    "net.ipv4.tcp_fastopen_key",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_fack",
    "net.ipv4.tcp_ecn_option",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_dsack",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_tso_win_divisor",
    "net.core.default_qdisc",
];

/// Sysctls whose Linux default is the only value the simulator models
/// (the sender's code has that value built in), with that value.
const FIXED: &[(&str, &str, &str)] = &[
    ("net.ipv4.tcp_frto", "2", "F-RTO (RFC 5682) as tcp_process_loss() runs it"),
    ("net.ipv4.tcp_reordering", "3", "the initial reordering degree (tp->reordering)"),
    ("net.ipv4.tcp_early_retrans", "3", "tail loss probes on (RFC 8985 §7)"),
    ("net.ipv4.tcp_recovery", "1", "RACK loss detection (RFC 8985)"),
    ("net.ipv4.tcp_pacing_ss_ratio", "200", "tcp_update_pacing_rate()'s slow-start ratio"),
    ("net.ipv4.tcp_pacing_ca_ratio", "120", "tcp_update_pacing_rate()'s ratio after slow start"),
    ("net.ipv4.tcp_adv_win_scale", "1", "the receive window from the buffer"),
    ("net.ipv4.tcp_mtu_probing", "0", "no path MTU probing"),
    ("net.ipv4.tcp_moderate_rcvbuf", "1", "receive-buffer autotuning"),
];

/// Aliases a value may take for the FIXED entries (tcp_early_retrans 4
/// and 3 both enable TLP since RACK replaced the ER timer in Linux 4.10).
fn same_setting(key: &str, value: &str, modelled: &str) -> bool {
    value == modelled || (key == "net.ipv4.tcp_early_retrans" && matches!(value, "3" | "4"))
}

fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(format!("{key} = {value:?}: allowed 0 or 1")),
    }
}

fn parse_triple(key: &str, value: &str) -> Result<[u64; 3], String> {
    let v: Vec<u64> = value.split_whitespace().map(|x| x.parse::<u64>()).collect::<Result<_, _>>()
        .map_err(|_| format!("{key} = {value:?}: allowed three byte counts \"min default max\""))?;
    if v.len() != 3 || v[0] > v[1] || v[1] > v[2] {
        return Err(format!("{key} = {value:?}: allowed three byte counts min <= default <= max"));
    }
    Ok([v[0], v[1], v[2]])
}

impl Sysctls {
    /// Sets `key` (dotted name, e.g. net.ipv4.tcp_sack) to `value`, as
    /// `sysctl -w` would, or says why the simulated socket cannot.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match key {
            "net.ipv4.tcp_rmem" => self.tcp_rmem = parse_triple(key, value)?,
            "net.ipv4.tcp_wmem" => self.tcp_wmem = parse_triple(key, value)?,
            "net.ipv4.tcp_timestamps" => self.tcp_timestamps = parse_bool(key, value)?,
            "net.ipv4.tcp_sack" => self.tcp_sack = parse_bool(key, value)?,
            "net.ipv4.tcp_window_scaling" => self.tcp_window_scaling = parse_bool(key, value)?,
            "net.ipv4.tcp_slow_start_after_idle" => self.tcp_slow_start_after_idle = parse_bool(key, value)?,
            "net.ipv4.tcp_ecn" => {
                self.tcp_ecn = match value {
                    "0" | "1" | "2" => value.parse().unwrap(),
                    _ => return Err(format!("{key} = {value:?}: allowed 0, 1 or 2 (AccECN is not modelled)")),
                }
            }
            "net.ipv4.tcp_congestion_control" => {
                if crate::cc::lookup(value).is_none() {
                    return Err(format!("{key} = {value:?}: the simulator has no such algorithm"));
                }
                self.tcp_congestion_control = value.to_string();
            }
            "net.ipv4.tcp_min_tso_segs" => {
                self.tcp_min_tso_segs = match value.parse::<u32>() {
                    Ok(n @ 1..=255) => n,
                    _ => return Err(format!("{key} = {value:?}: allowed 1 to 255")),
                }
            }
            "net.core.rmem_max" => {
                self.rmem_max = value.parse().map_err(|_| format!("{key} = {value:?}: allowed a byte count"))?
            }
            "dev.root_qdisc" => {
                self.root_qdisc_paces = match value {
                    "fq" => true,
                    "pfifo" | "pfifo_fast" | "noqueue" => false,
                    _ => return Err(format!("root qdisc {value:?}: allowed pfifo, pfifo_fast, noqueue or fq")),
                }
            }
            _ if NO_EFFECT.contains(&key) => {}
            _ => match FIXED.iter().find(|(k, _, _)| *k == key) {
                Some((_, modelled, _)) if same_setting(key, value, modelled) => {}
                Some((_, modelled, what)) => {
                    return Err(format!("{key} = {value}: the simulator models only {modelled} ({what})"))
                }
                None => return Err(format!("{key}: not a sysctl the simulated socket knows")),
            },
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modelled_sysctls_change_and_others_are_refused_by_name() {
        let mut s = Sysctls::default();
        s.set("net.ipv4.tcp_rmem", "4096 540000 15728640").unwrap();
        assert_eq!(s.tcp_rmem, [4096, 540_000, 15_728_640]);
        s.set("net.ipv4.tcp_early_retrans", "4").unwrap();
        s.set("net.ipv4.tcp_fastopen", "0x70403").unwrap();
        let e = s.set("net.ipv4.tcp_recovery", "0").unwrap_err();
        assert!(e.contains("tcp_recovery") && e.contains("only 1"), "{e}");
        let e = s.set("net.ipv4.tcp_congestion_control", "nope").unwrap_err();
        assert!(e.contains("nope"), "{e}");
        assert!(s.set("net.ipv4.tcp_bogus", "1").unwrap_err().contains("tcp_bogus"));
    }
}
