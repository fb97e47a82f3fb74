#!/usr/bin/env python3
"""Bytes per row of the two bookkeeping tables the store purges (docs/store.md "Bounded tables").

    python3 Benchmarks/Store/table-growth.py

Builds each table as StoreSchema creates it (with its index) in a fresh SQLite file, inserts 100,000 rows of
the size the service writes — a notification UUID; a stored retention answer holding a V2 promotional offer
(a compact JWS of about 520 bytes, as the service's) — and divides the file's size by the row count.
"""
import json
import os
import sqlite3
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "IntegrationTests"))
import scratch  # noqa: E402  (IntegrationTests/scratch.py: the run's folder, removed when it passes)

ROWS = 100_000
work = scratch.folder("offer-signer-growth-")


def measure(name, statements, insert, rows):
    path = os.path.join(work, f"{name}.sqlite")
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.executemany(insert, rows)
    connection.commit()
    connection.close()
    print(f"{name}: {os.path.getsize(path) / ROWS:.0f} bytes per row ({ROWS:,} rows, SQLite file with its index)")


measure(
    "processed_notifications",
    ["CREATE TABLE processed_notifications (notification_uuid TEXT PRIMARY KEY, processed_at INTEGER NOT NULL)",
     "CREATE INDEX processed_notifications_by_time ON processed_notifications (processed_at)"],
    "INSERT INTO processed_notifications VALUES (?, ?)",
    ((str(uuid.uuid4()), 1_700_000_000_000 + i) for i in range(ROWS)))

jws = "eyJ" + "x" * 517
answer = json.dumps({"request": "2000000123456789 com.example.monthly", "answer": {"promotionalOffer": {
    "messageIdentifier": str(uuid.uuid4()), "promotionalOfferSignatureV2": jws}}}, separators=(",", ":"))
measure(
    "stored_answers",
    ["CREATE TABLE stored_answers (answer_key TEXT PRIMARY KEY, answer TEXT NOT NULL, created_at INTEGER NOT NULL)",
     "CREATE INDEX stored_answers_by_time ON stored_answers (created_at)"],
    "INSERT INTO stored_answers VALUES (?, ?, ?)",
    ((f"retention:com.example.app:{uuid.uuid4()}", answer, 1_700_000_000_000 + i) for i in range(ROWS)))
scratch.finish(work, failed=False)
