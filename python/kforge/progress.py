"""A progress bar for long streams (WatchJob, EvaluateBatch) with no hard dependency.

On a terminal it uses tqdm when tqdm is installed, else draws its own bar in place with "\\r".
When the stream is not a terminal (a log file, CI, a notebook's captured stderr) it prints
plain-text lines, one per change and at most one per `min_interval_s`, plus the last state
when closed, so logs stay readable.

Thread-safety: one Progress is used by one thread.
"""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

BAR_WIDTH = 24


def _tqdm_class():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def render_line(desc: str, done: int, total: Optional[int], status: str) -> str:
    """'desc [#########---------] 3/8 status', or 'desc 3 status' when the total is unknown."""
    if total:
        filled = min(BAR_WIDTH, BAR_WIDTH * done // total)
        text = f"{desc} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done}/{total}"
    else:
        text = f"{desc} {done}"
    return f"{text} {status}".rstrip()


class Progress:
    def __init__(self, desc: str, total: Optional[int] = None, file: Optional[TextIO] = None,
                 min_interval_s: float = 1.0, use_tqdm: Optional[bool] = None):
        self._file = file if file is not None else sys.stderr
        self._desc = desc
        self._total = total
        self._done = 0
        self._status = ""
        self._tty = _is_tty(self._file)
        self._min_interval_s = min_interval_s
        self._last_printed = ""
        self._last_print_time = float("-inf")
        self._tqdm = None
        tqdm = _tqdm_class() if (use_tqdm if use_tqdm is not None else self._tty) else None
        if tqdm is not None:
            self._tqdm = tqdm(total=total, desc=desc, file=self._file, dynamic_ncols=True)

    def update(self, done: int, status: str = "", total: Optional[int] = None) -> None:
        """Sets the count (not an increment), the status text and, if given, a new total."""
        if total is not None:
            self._total = total
        self._done, self._status = done, status
        if self._tqdm is not None:
            if total is not None:
                self._tqdm.total = total
            self._tqdm.update(done - self._tqdm.n)
            self._tqdm.set_postfix_str(status, refresh=True)
            return
        self._draw(final=False)

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
            return
        self._draw(final=True)
        if self._tty:
            self._file.write("\n")
            self._file.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _draw(self, final: bool) -> None:
        line = render_line(self._desc, self._done, self._total, self._status)
        if self._tty:
            pad = " " * max(0, len(self._last_printed) - len(line))
            self._file.write("\r" + line + pad)
            self._file.flush()
            self._last_printed = line
            return
        now = time.monotonic()
        if line == self._last_printed:
            return
        if not final and now - self._last_print_time < self._min_interval_s:
            return
        self._file.write(line + "\n")
        self._file.flush()
        self._last_printed, self._last_print_time = line, now
