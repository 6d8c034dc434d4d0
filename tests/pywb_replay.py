"""Replay pages through pywb, in a process of its own (pywb patches it with gevent).

``python -m tests.pywb_replay WORKDIR REQUESTS NAME=INDEX,WARC_DIR...``: REQUESTS is JSON
``[[collection, timestamp14, url], ...]``; each NAME=... is a pywb collection of one CDXJ
index file and one folder of WARC files. Prints JSON ``[[status, body as hex], ...]``, one
per request: what pywb's identity replay (``{ts}id_/{url}``: the archived bytes, not
rewritten) serves.
"""

import json
import os
import sys
from pathlib import Path


def main() -> None:
    work, requests, *collections = sys.argv[1:]
    config = Path(work) / "config.yaml"
    config.write_text(json.dumps({"collections": {  # JSON is YAML
        name: {"index_paths": index, "archive_paths": str(Path(warcs).resolve()) + "/"}
        for name, index, warcs in (c.replace("=", ",", 1).split(",") for c in collections)}}))
    os.chdir(work)
    from pywb.apps.frontendapp import FrontEndApp  # noqa: E402 (patches the process)
    from werkzeug.test import Client

    client = Client(FrontEndApp(config_file=str(config)))
    served = []
    for collection, ts, url in json.loads(requests):
        r = client.get(f"/{collection}/{ts}id_/{url}")
        served.append([r.status_code, r.data.hex()])
    print(json.dumps(served))


if __name__ == "__main__":
    main()
