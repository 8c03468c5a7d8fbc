"""The floor `assay run` is measured against (benchmarks/bench_run_cli.py): a bare aiohttp client loop.

    python benchmarks/_bare_aiohttp.py GOLDEN_FILE SEARCH_URL CONCURRENCY

A whole process, like `assay run`: Python starts, imports aiohttp, reads the golden file's queries with
the json module, and CONCURRENCY workers share one session, each POSTing the http_json request the
harness's default adapter sends (`{"q", "filters", "size", "locale"}` and `Accept-Language`) and
json-decoding the reply's hit ids. Nothing else: no validation, retries, scoring or artifact. Prints
the seconds its requests took (from the first request to the last reply) on stdout.
"""

import asyncio
import json
import sys
import time

import aiohttp


async def main(golden_path: str, url: str, concurrency: int) -> float:
    with open(golden_path, "rb") as handle:
        golden = json.load(handle)
    size = golden.get("k", 10)
    cursor = iter(golden["queries"])
    started = time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def worker() -> None:
            for query in cursor:
                body = {"q": query["text"], "filters": query.get("filters", {}), "size": size}
                headers = {}
                if query.get("locale"):
                    body["locale"] = headers["Accept-Language"] = query["locale"]
                async with session.post(url, json=body, headers=headers) as response:
                    [hit["id"] for hit in json.loads(await response.read())["hits"]]

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


if __name__ == "__main__":
    print(f"{asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]))):.4f}")
