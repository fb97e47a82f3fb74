#!/usr/bin/env python3
"""The issued-signature log's write amplification, schema version 5 against version 6 (docs/PERFORMANCE.md,
"The log's write amplification"):

    Benchmarks/Store/log-write-amplification.py [records] [customers] [batch]

Writes `records` rows (after 20,000 to warm the tables up) the way the group commit does — one multi-row
`INSERT … ON CONFLICT DO NOTHING RETURNING` per batch inside `BEGIN IMMEDIATE … COMMIT`, WAL, synchronous=FULL,
temp_store=MEMORY — spread over `customers` customers, and reports per record: bytes written to the files (the
process's `wchar`: WAL frames, whole 4 KiB pages, plus the checkpoints' copies into the database file), CPU and
wall time, and the file's bytes per row. Python's sqlite3 is another build of SQLite than sqlite-nio's, with the
same file format and B-tree: the bytes are the same, the microseconds are this process's (Python included).
"""
import os, random, sqlite3, sys, tempfile, time, uuid

COLUMNS = ("key_identifier TEXT NOT NULL, bundle_identifier TEXT NOT NULL, product_identifier TEXT NOT NULL, "
           "offer_identifier TEXT NOT NULL, application_username TEXT NOT NULL, timestamp INTEGER NOT NULL, "
           "format TEXT NOT NULL, channel TEXT NOT NULL DEFAULT 'api', request_identifier TEXT")
SCHEMAS = {
    # Versions 1 and 5 of Sources/OfferStore/SQL/StoreSchema.swift.
    "version 5: nonce primary key + customer, key, time indexes": (
        [f"CREATE TABLE issued_signatures (nonce TEXT PRIMARY KEY, {COLUMNS})",
         "CREATE INDEX issued_by_customer ON issued_signatures (bundle_identifier, application_username, timestamp)",
         "CREATE INDEX issued_by_key ON issued_signatures (key_identifier, timestamp)",
         "CREATE INDEX issued_by_time ON issued_signatures (timestamp)"],
        "(nonce)", "nonce"),
    # Version 6.
    "version 6: unique (timestamp, nonce) + customer, key indexes": (
        [f"CREATE TABLE issued_signatures (nonce TEXT NOT NULL, {COLUMNS}, UNIQUE (timestamp, nonce))",
         "CREATE INDEX issued_by_customer ON issued_signatures (bundle_identifier, application_username, timestamp)",
         "CREATE INDEX issued_by_key ON issued_signatures (key_identifier, timestamp)"],
        "(timestamp, nonce)", "timestamp, nonce"),
}


def written():
    for line in open("/proc/self/io"):
        if line.startswith("wchar:"):
            return int(line.split()[1])


def measure(statements, conflict, returning, records, customers, batch, directory):
    path = os.path.join(directory, "log.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "temp_store=MEMORY"):
        db.execute("PRAGMA " + pragma)
    for statement in statements:
        db.execute(statement)
    insert = ("INSERT INTO issued_signatures (nonce, key_identifier, bundle_identifier, product_identifier, "
              "offer_identifier, application_username, timestamp, format, channel, request_identifier) VALUES "
              + ",".join(["(?,?,?,?,?,?,?,?,?,?)"] * batch) + f" ON CONFLICT {conflict} DO NOTHING RETURNING {returning}")
    clock = [1_800_000_000_000]

    def write_batch():
        values = []
        for _ in range(batch):
            clock[0] += 1
            values += [str(uuid.uuid4()), "BENCHKEY01", "com.example.app", "com.example.monthly", "winback_50",
                       "user-%06d" % random.randrange(customers), clock[0], "legacy", "api", None]
        db.execute("BEGIN IMMEDIATE")
        db.execute(insert, values).fetchall()
        db.execute("COMMIT")

    for _ in range(20_000 // batch):
        write_batch()
    bytes0, cpu0, wall0 = written(), time.process_time(), time.time()
    for _ in range(records // batch):
        write_batch()
    bytes1, cpu1, wall1 = written(), time.process_time(), time.time()
    n = (records // batch) * batch
    rows = db.execute("SELECT COUNT(*) FROM issued_signatures").fetchone()[0]
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(path)
    db.close()
    return (bytes1 - bytes0) / n, (cpu1 - cpu0) / n * 1e6, (wall1 - wall0) / n * 1e6, size / rows


def main():
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 30_000
    customers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    print(f"{records} records in batches of {batch}, {customers} customer(s), SQLite {sqlite3.sqlite_version}")
    print("| schema | bytes written per record | CPU µs per record | wall µs per record | file bytes per row |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for name, (statements, conflict, returning) in SCHEMAS.items():
            b, cpu, wall, row = measure(statements, conflict, returning, records, customers, batch, directory)
            print(f"| {name} | {b:,.0f} | {cpu:.1f} | {wall:.1f} | {row:.0f} |")


if __name__ == "__main__":
    main()
