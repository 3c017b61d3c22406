#!/usr/bin/env python3
"""Render a study's report.html in headless chromium and save a screenshot.

    scripts/screenshot_report.py DIR [--out OUT.png] [--height 2000]

DIR is a study directory (DIR/report/report.html) or the report file itself.
Needs Debian's chromium (`apt-get install -y chromium`, see scripts/install.sh).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--hide-scrollbars"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(report: Path, out: Path, width: int = 1400, height: int = 2000,
               timeout_s: float = 120) -> Path:
    """Save a `width`×`height` screenshot of `report` to `out`."""
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium not found; apt-get install -y chromium")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fatpipe-chromium-") as profile:
        cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
               f"--screenshot={out.resolve()}", f"--window-size={width},{height}",
               report.resolve().as_uri()]
        subprocess.run(cmd, check=True, timeout=timeout_s, capture_output=True)
    if not out.exists():
        raise RuntimeError(f"chromium wrote no screenshot to {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("dir", help="study directory or report.html")
    ap.add_argument("--out", help="PNG to write (default DIR/report/screenshot.png)")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=2000)
    args = ap.parse_args(argv)
    target = Path(args.dir)
    report = target if target.suffix == ".html" else target / "report" / "report.html"
    if not report.exists():
        print(f"error: {report} does not exist (run `fatpipe report {args.dir}`)", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else report.parent / "screenshot.png"
    print(screenshot(report, out, args.width, args.height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
