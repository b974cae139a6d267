"""Headless Chromium for the report page tests: the distribution's own package (``make
browser`` installs it where it is missing). Each call runs one browser with its own
profile, under a timeout, and kills the browser's whole process group when it is done or
too slow, so no test can hang on it or leave one behind."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome")
#: Seconds a browser may take to load a page and dump it or take a screenshot.
TIMEOUT = 60
#: A console line Chromium writes to stderr (``--enable-logging=stderr``): every message
#: the page logs, and every uncaught script error.
CONSOLE = re.compile(r"^\[[^\]]*:CONSOLE[^\]]*\] (.*)$", re.MULTILINE)


def binary() -> str:
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no Chromium on PATH: `make browser` installs Debian's chromium package")


@dataclass(frozen=True)
class Loaded:
    dom: str
    console: list[str]


def _run(page: Path, profile: Path, *extra: str) -> tuple[str, str]:
    args = [
        binary(),
        "--headless",
        "--no-sandbox",  # tests run as root in CI containers
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        *extra,
        page.resolve().as_uri(),
    ]
    browser = subprocess.Popen(  # noqa: S603 - a fixed browser on a file the test wrote
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = browser.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(browser.pid, signal.SIGKILL)
        browser.communicate()
        pytest.fail(f"Chromium took more than {TIMEOUT} s on {page}")
    finally:
        try:  # its renderer and helpers too
            os.killpg(browser.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert browser.returncode == 0, err[-2000:]
    return out, err


def load(page: Path, tmp: Path, window: tuple[int, int] | None = None) -> Loaded:
    """The page's DOM after its scripts ran, and what it wrote to the console; ``window``:
    the browser window's width and height in pixels (default: Chromium's)."""
    size = [f"--window-size={window[0]},{window[1]}"] if window else []
    out, err = _run(page, tmp / "profile-dom", *size, "--dump-dom")
    return Loaded(out, CONSOLE.findall(err))


def screenshot(page: Path, tmp: Path, width: int = 1280, height: int = 1600) -> Path:
    shot = tmp / f"{page.stem}.png"
    _run(page, tmp / "profile-shot", f"--window-size={width},{height}", f"--screenshot={shot}")
    assert shot.is_file(), "Chromium wrote no screenshot"
    return shot


def not_blank(shot: Path) -> float:
    """The screenshot's pixel variance (grey levels); a blank page has about none."""
    from PIL import Image, ImageStat

    with Image.open(shot) as image:
        return float(ImageStat.Stat(image.convert("L")).var[0])
