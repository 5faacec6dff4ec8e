"""The `GET /metrics` scrape of the server the SDK suite has just driven, read by
the Prometheus project's own OpenMetrics parser (prometheus_client's
`openmetrics.parser`, strict: metadata, suffixes by type, unique label sets,
bucket order, the `# EOF` terminator). A scrape a Prometheus server would
refuse fails here with the parser's reason.

After the suite's traffic (uploads, job reads, errors, v1/v2 streams and a
realtime session) the scrape must also say what happened: requests counted by
route template with their statuses, latency histograms, stream sessions closed
with their analysis lag observed, jobs that waited in the queue, and no API
key anywhere in it.

Usage: python check_metrics.py BASE_URL (SDK_KEY, SDK_OTHER_KEY and
SDK_STREAM_ONLY_KEY in the environment are the credentials that must not
appear). Exit status 0 when every check holds.
"""

import os
import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main() -> int:
    base = sys.argv[1].rstrip("/")
    with urllib.request.urlopen(f"{base}/metrics", timeout=30) as response:
        content_type = response.headers.get("Content-Type", "")
        text = response.read().decode("utf-8")
    problems = []
    if not content_type.startswith("application/openmetrics-text"):
        problems.append(f"content type {content_type!r}")

    try:
        families = {f.name: f for f in text_string_to_metric_families(text)}
    except ValueError as error:
        print(f"/metrics is not valid OpenMetrics text: {error}\n{text}", file=sys.stderr)
        return 1

    expected = {
        "attune_http_requests": ("counter", ""),
        "attune_http_request_duration_seconds": ("histogram", "seconds"),
        "attune_jobs": ("gauge", ""),
        "attune_job_queue_wait_seconds": ("histogram", "seconds"),
        "attune_job_queue_oldest_age_seconds": ("gauge", "seconds"),
        "attune_stream_sessions": ("gauge", ""),
        "attune_stream_dropped_seconds": ("counter", "seconds"),
        "attune_stream_analysis_lag_seconds": ("histogram", "seconds"),
        "attune_store_errors": ("counter", ""),
    }
    for name, (kind, unit) in expected.items():
        family = families.get(name)
        if family is None:
            problems.append(f"no family {name}")
        elif (family.type, family.unit) != (kind, unit):
            problems.append(f"{name} is {family.type}/{family.unit!r}, expected {kind}/{unit!r}")

    def samples(family, suffix):
        return [s for s in families[family].samples if s.name == family + suffix] if family in families else []

    requests = samples("attune_http_requests", "_total")
    by_route = {}
    for s in requests:
        key = (s.labels["route"], s.labels["status"])
        by_route[key] = by_route.get(key, 0) + s.value
    if sum(by_route.values()) < 50:
        problems.append(f"only {sum(by_route.values())} requests counted after the suite")
    if by_route.get(("/v2/upload/analyze", "202"), 0) < 1:
        problems.append("no accepted v2 upload counted under its route template")
    if not any(status.startswith("4") for _, status in by_route):
        problems.append("no 4xx counted, though the suite provokes client errors")
    if any(route.startswith("/v2/upload/jobs/") and route != "/v2/upload/jobs/{job_id}"
           for route, _ in by_route):
        problems.append("a job route counted by raw path, not by template")
    if sum(s.value for s in samples("attune_http_request_duration_seconds", "_count")) < 50:
        problems.append("request latencies not observed")
    if sum(s.value for s in samples("attune_job_queue_wait_seconds", "_count")) < 1:
        problems.append("no job's queue wait observed")
    lag = {s.labels["endpoint"]: s.value for s in samples("attune_stream_analysis_lag_seconds", "_count")}
    if sum(lag.values()) < 1:
        problems.append(f"no stream window's analysis lag observed: {lag}")
    open_sessions = sum(s.value for s in samples("attune_stream_sessions", ""))
    if open_sessions != 0:
        problems.append(f"{open_sessions} stream sessions still counted open after the suite")

    for variable in ("SDK_KEY", "SDK_OTHER_KEY", "SDK_STREAM_ONLY_KEY"):
        secret = os.environ.get(variable, "")
        if secret and secret in text:
            problems.append(f"{variable} appears in the scrape")

    for problem in problems:
        print(f"/metrics: {problem}", file=sys.stderr)
    if not problems:
        print(f"/metrics: valid OpenMetrics, {len(families)} families, "
              f"{int(sum(by_route.values()))} requests by route template, "
              f"analysis lag observed {lag}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
