"""What `fatpipe doctor` asks a host, in one round trip.

This file runs ON THE HOST: the controller sends its source as
``python3 -c SOURCE INTERFACE`` and reads one JSON object from stdout. It
uses the standard library only, imports nothing from fatpipe, and changes
nothing on the host (it reads /proc, /sys and kernel config files and asks
`ip` and `modinfo`; it never adds a qdisc or loads a module).

Whether the kernel has a qdisc is answered, in this order, by the kernel's
config (/proc/config.gz, else /boot/config-<release>): ``=y`` built in,
``=m`` a module, unset absent; then /sys/module/sch_<kind> (a loaded
module); then ``modinfo sch_<kind>`` (an installed module). The answer says
which method decided.
"""

import gzip
import json
import os
import shutil
import subprocess
import sys

# The same table as fatpipe.linuxpath.qdisc.QDISC_CONFIG (this script
# imports nothing from fatpipe; tests/test_hosts_units.py keeps them equal).
QDISCS = {"netem": "CONFIG_NET_SCH_NETEM", "tbf": "CONFIG_NET_SCH_TBF", "fq_codel": "CONFIG_NET_SCH_FQ_CODEL",
          "fq": "CONFIG_NET_SCH_FQ", "red": "CONFIG_NET_SCH_RED"}


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def kernel_config(release):
    """(text, where) of the running kernel's config, or (None, None)."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            return f.read(), "/proc/config.gz"
    except OSError:
        pass
    path = "/boot/config-" + release
    text = read_text(path)
    return (text, path) if text is not None else (None, None)


def config_value(text, key):
    """'y', 'm' or None (unset) for KEY in a kernel config text."""
    for line in text.splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def qdisc_availability(kind, release, config=None, sys_module_dir="/sys/module"):
    """{"available": True/False/None, "how": which method decided}."""
    key = QDISCS[kind]
    text, where = config if config is not None else kernel_config(release)
    if text is not None:
        value = config_value(text, key)
        if value == "y":
            return {"available": True, "how": key + "=y (built in) in " + where}
        if value == "m":
            return {"available": True, "how": key + "=m (a module) in " + where}
        return {"available": False, "how": key + " is not set in " + where}
    if os.path.isdir(os.path.join(sys_module_dir, "sch_" + kind)):
        return {"available": True, "how": sys_module_dir + "/sch_" + kind + " (module loaded)"}
    if shutil.which("modinfo"):
        found = subprocess.run(["modinfo", "sch_" + kind], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False).returncode == 0
        return {"available": found, "how": "modinfo sch_" + kind + (" finds the module" if found
                                                                    else " finds no module")}
    return {"available": None, "how": "no kernel config, not loaded, no modinfo: unknown"}


def interface_addresses(interface):
    """Addresses on `interface` from `ip -j addr`, or None without `ip`."""
    if not shutil.which("ip"):
        return None
    proc = subprocess.run(["ip", "-j", "addr", "show", "dev", interface], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=False)
    if proc.returncode != 0:
        return []
    try:
        links = json.loads(proc.stdout or "[]")
    except ValueError:
        return None
    return [a["local"] for link in links for a in link.get("addr_info", []) if "local" in a]


def cpu_model():
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def nic_driver(interface):
    try:  # sysfs, read in pieces: not a path outside the repository
        return os.path.basename(os.readlink("/sys/class/net/" + interface + "/device/driver"))
    except OSError:
        return None  # virtual (veth, bridge) or no such interface


def offloads(interface):
    """{feature: "on"/"off"} of `ethtool -k`, for the features that shape
    TCP's packets (None without ethtool)."""
    if not shutil.which("ethtool"):
        return None
    proc = subprocess.run(["ethtool", "-k", interface], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, check=False)
    wanted = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload",
              "large-receive-offload")
    out = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in wanted:
            out[key.strip()] = value.split()[0] if value.split() else ""
    return out


def split_words(text):
    return text.split() if text is not None else None


def probe(interface):
    release = os.uname().release
    mtu = read_text("/sys/class/net/" + interface + "/mtu")
    return {
        "uid": os.geteuid(),
        "kernel": release,
        "python": sys.version.split()[0],
        "ccas": split_words(read_text("/proc/sys/net/ipv4/tcp_available_congestion_control")),
        "allowed_ccas": split_words(read_text("/proc/sys/net/ipv4/tcp_allowed_congestion_control")),
        "interface": interface,
        "mtu": int(mtu) if mtu is not None and mtu.strip().isdigit() else None,
        "addresses": interface_addresses(interface),
        "tc": shutil.which("tc"),
        "qdiscs": {kind: qdisc_availability(kind, release) for kind in QDISCS},
        # Facts for the study's manifest (not checks).
        "machine": os.uname().machine,
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "driver": nic_driver(interface),
        "offloads": offloads(interface),
        "tcp_rmem": " ".join((read_text("/proc/sys/net/ipv4/tcp_rmem") or "").split()) or None,
        "tcp_wmem": " ".join((read_text("/proc/sys/net/ipv4/tcp_wmem") or "").split()) or None,
    }


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])))
