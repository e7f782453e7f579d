"""Dates of publication: whatever form a source gives them in, as UTC timestamps.

Sources say when an article was published in many forms: ISO 8601 from JSONL and Atom
(``2005-03-01``, ``2005-03-01T18:30:00+01:00``), RFC 2822 from RSS (``Tue, 01 Mar 2005
18:30:00 GMT``), HTML ``<meta>`` tags and ``<time datetime>`` (read by
:func:`html_published` when trafilatura finds no date), and trafilatura's own
``YYYY-MM-DD``. A time without a zone is taken as UTC. The raw string is kept beside the
timestamp, so nothing the source said is lost.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_YEAR_MONTH = re.compile(r"^\d{4}-\d{2}$")
_YEAR = re.compile(r"^\d{4}$")
# Day-first and month-name forms seen on news sites: "1 March 2005", "March 1, 2005".
_NAMED = ("%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%d/%m/%Y")
_META = re.compile(
    r"""<meta\s[^>]*?(?:property|name|itemprop)\s*=\s*["']?(article:published_time|og:published_time|"""
    r"""datePublished|pubdate|publishdate|date|dc\.date|dcterms\.created|sailthru\.date)["']?[^>]*>""",
    re.IGNORECASE,
)
_CONTENT = re.compile(r"""content\s*=\s*["']([^"']{4,64})["']""", re.IGNORECASE)
_TIME = re.compile(r"""<time\s[^>]*?datetime\s*=\s*["']([^"']{4,64})["']""", re.IGNORECASE)


def parse_date(value: str | None) -> datetime | None:
    """``value`` as an aware UTC datetime, or None when it is not a date this reads."""
    if not isinstance(value, str):
        return None
    s = value.strip()
    if not s or len(s) > 64:
        return None
    dt: datetime | None = None
    if _YEAR.match(s):
        s += "-01-01"
    elif _YEAR_MONTH.match(s):
        s += "-01"
    iso = s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        dt = None
    if dt is None:
        try:
            dt = parsedate_to_datetime(s)
        except (TypeError, ValueError, IndexError):
            dt = None
    if dt is None:
        for fmt in _NAMED:
            try:
                dt = datetime.strptime(s, fmt)
                break
            except ValueError:
                continue
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        return dt.astimezone(timezone.utc)
    except OverflowError:  # 9999-12-31T23:59:59-05:00 is in year 10000 in UTC: no date we read
        return None


def timestamp(value: str | None) -> float | None:
    """``value`` as seconds since the epoch (UTC), or None."""
    dt = parse_date(value)
    return dt.timestamp() if dt is not None else None


def is_date_only(value: str) -> bool:
    """``2005-03-01`` (or ``2005-03``, ``2005``): a bound that means a whole day, month or year."""
    s = value.strip()
    return bool(_DATE_ONLY.match(s) or _YEAR_MONTH.match(s) or _YEAR.match(s))


def end_of(value: str) -> datetime:
    """The last instant of the day, month or year a date-only bound names ("until 2005-03-01")."""
    start = parse_date(value)
    assert start is not None
    s = value.strip()
    try:
        if _YEAR.match(s):
            nxt = start.replace(year=start.year + 1)
        elif _YEAR_MONTH.match(s):
            nxt = (start + timedelta(days=32)).replace(day=1)
        else:
            nxt = start + timedelta(days=1)
    except (OverflowError, ValueError):  # the last day, month or year there is (9999)
        return datetime.max.replace(tzinfo=timezone.utc)
    return nxt - timedelta(microseconds=1)


def iso_utc(ts: float | None) -> str | None:
    """A timestamp as ISO 8601 in UTC (``2005-03-01T18:30:00Z``)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def month(ts: float | None) -> str | None:
    """The facet bucket of a timestamp: ``2005-03``."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m")


def with_time(day: str | None, stamp: str | None) -> str | None:
    """``day`` (a page's date as an extractor read it, often the day only), or ``stamp``
    when that states the same day to within a time zone and also the time of day, as an
    ``article:published_time`` meta tag does: a filter ``since`` an hour keeps it right."""
    if not day:
        return stamp or None
    if not stamp or not is_date_only(day) or is_date_only(stamp):
        return day
    d, t = parse_date(day), parse_date(stamp)
    if d is None or t is None or abs((t - d).total_seconds()) > 2 * 86400:
        return day
    return stamp


def html_published(html: str) -> str | None:
    """The publication date a page states in its ``<meta>`` tags or first ``<time datetime>``."""
    head = html[:200_000]
    for m in _META.finditer(head):
        c = _CONTENT.search(m.group(0))
        if c and parse_date(c.group(1)) is not None:
            return c.group(1).strip()
    t = _TIME.search(head)
    if t and parse_date(t.group(1)) is not None:
        return t.group(1).strip()
    return None
