"""The oracle of services/cron/tests/all/croniter.rs: the fire times croniter
(Hermes's cron library) gives for each case.

Reads a JSON list of cases {"expr", "start" (RFC 3339), "tz" (IANA), "count"}
on stdin; writes a JSON list with, per case, the next `count` fire times
strictly after `start` as RFC 3339 with the zone's offset, or {"error": text}
when croniter refuses the expression.
"""

import json
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

from croniter import croniter


def fires(case):
    zone = ZoneInfo(case["tz"])
    start = datetime.fromisoformat(case["start"].replace("Z", "+00:00")).astimezone(zone)
    try:
        schedule = croniter(case["expr"], start)
    except Exception as error:  # croniter raises several types for bad input
        return {"error": f"{type(error).__name__}: {error}"}
    out = []
    for _ in range(case["count"]):
        fire = schedule.get_next(datetime).astimezone(zone)
        out.append(fire.isoformat(timespec="seconds"))
    return out


def main():
    cases = json.load(sys.stdin)
    json.dump([fires(case) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
