"""One line that states the machine, printed with every benchmark figure."""

from __future__ import annotations

import os
import platform


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()[0]
    return (
        f"{len(os.sched_getaffinity(0))} cores ({cpu}), {mem:.0f} GB, Python {platform.python_version()}, "
        f"load average {load:.1f} at start (shared machine)"
    )
