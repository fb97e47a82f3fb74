/// One replica's side of a fleet's token buckets (``SharedTokenBuckets``), as a value: takes in, leases and returns
/// out, the clock given. No I/O: the executor sends what ``leases()`` and ``sweep(now:)`` return to the store and
/// hands the answers to ``granted(_:_:secondsToNextToken:now:)`` or ``failed(_:)``.
///
/// A take that can wait for the store (`waiting`: admin authentications, console sign-ins, the async paths) never
/// owes: a bucket's first take on this replica asks (``Decision/ask``) and is decided by the lease's answer, so the
/// fleet never gets more than the limit. On the event-loop path, which cannot wait, a bucket's first take is allowed
/// before the store has answered (the replica owes it, and up to ``chunk`` more while that first lease is out), then
/// the lease pays the debt first; so such a request never waits for the store on a bucket it has not used lately,
/// and the fleet can get at most ``chunk`` more than its limit per replica, only where a bucket is empty at that
/// first take. A bucket found empty is remembered until it would be full again (no debt meanwhile); every later take
/// spends leased tokens, or asks.
struct SharedBucketLedger: Sendable {
    enum Decision: Sendable, Hashable {
        case allowed
        case limited(retryAfterSeconds: Int)
        /// No token here now and none owed: a lease is on its way; a caller that can wait asks again after it.
        case ask
    }

    struct Entry: Sendable {
        /// Leased and not spent.
        var tokens = 0
        /// Spent before the first lease answered.
        var debt = 0
        /// A lease has answered since the entry was made.
        var known = false
        /// A lease is queued or out.
        var leasing = false
        /// The store said the bucket is empty until then.
        var emptyUntil: ContinuousClock.Instant?
        /// The bucket was found short: remembered (never forgotten) until it would be full again.
        var keepUntil: ContinuousClock.Instant?
        var lastUsed: ContinuousClock.Instant
    }

    /// Tokens a lease asks for beyond any debt: ~5 % of the burst, at least 2 (at most the burst).
    let chunk: Int
    /// Seconds a bucket takes to fill from empty.
    let secondsToFill: Double
    /// Unspent tokens of a bucket unused this long go back to the store.
    let idle: Duration
    /// Buckets tracked at most; a new one beyond is ``Decision/ask`` (the executor's local buckets decide it).
    let maximumKeys: Int
    private(set) var entries: [String: Entry] = [:]
    private var queued: [String] = []
    /// Whether leases wait to be sent.
    var hasQueued: Bool { !queued.isEmpty }

    init(rate: Double, burst: Double, idle: Duration = .seconds(1), maximumKeys: Int = 100_000) {
        let burst = max(burst, 1)
        chunk = min(Int(burst), max(2, Int((burst * 0.05).rounded())))
        secondsToFill = min(burst / max(rate, 1e-9), 86_400)
        self.idle = idle
        self.maximumKeys = maximumKeys
    }

    /// Takes one token of `key`'s bucket; `waiting`: the caller can wait for a lease, so nothing is owed.
    mutating func take(_ key: String, now: ContinuousClock.Instant, waiting: Bool = false) -> Decision {
        guard var entry = entries[key] else {
            guard entries.count < maximumKeys else { return .ask }
            entries[key] = Entry(debt: waiting ? 0 : 1, leasing: true, lastUsed: now)
            queued.append(key)
            return waiting ? .ask : .allowed
        }
        entry.lastUsed = now
        defer { entries[key] = entry }
        if entry.tokens > 0 {
            entry.tokens -= 1
            if entry.tokens * 2 < chunk { lease(key, &entry) }  // the next lease is out before these run out
            return .allowed
        }
        if !entry.known, !waiting, entry.debt < chunk {
            entry.debt += 1
            return .allowed
        }
        if let until = entry.emptyUntil, until > now {
            return .limited(retryAfterSeconds: Self.wholeSeconds(until - now))
        }
        lease(key, &entry)
        return .ask
    }

    private mutating func lease(_ key: String, _ entry: inout Entry) {
        guard !entry.leasing else { return }
        entry.leasing = true
        queued.append(key)
    }

    /// The leases to send now, one a bucket: the chunk and the bucket's debt.
    mutating func leases() -> [(bucket: String, wanted: Int)] {
        defer { queued.removeAll(keepingCapacity: true) }
        return queued.compactMap { key in entries[key].map { (key, chunk + $0.debt) } }
    }

    /// A lease's answer: the debt is paid first; the rest is this replica's to spend.
    mutating func granted(_ key: String, _ granted: Int, secondsToNextToken: Double, now: ContinuousClock.Instant) {
        guard var entry = entries[key] else { return }
        let granted = max(granted, 0)
        let paid = min(granted, entry.debt)
        entry.tokens += granted - paid
        entry.debt = 0  // what was not paid was spent beyond the limit: the bound in the type's comment
        entry.known = true
        entry.leasing = false
        if entry.tokens == 0 {
            entry.emptyUntil = now + .seconds(min(max(secondsToNextToken, 0.01), 86_400))
            entry.keepUntil = now + .seconds(secondsToFill)
        } else {
            entry.emptyUntil = nil
        }
        entries[key] = entry
    }

    /// Leases that failed (the store did not answer): forgotten, debts with them; the executor decides locally.
    mutating func failed(_ keys: [String]) {
        for key in keys { entries[key] = nil }
    }

    /// Buckets unused for ``idle``: their unspent tokens, to give back; then forgotten, unless found short lately.
    mutating func sweep(now: ContinuousClock.Instant) -> [(bucket: String, count: Int)] {
        var returned: [(bucket: String, count: Int)] = []
        for (key, entry) in entries where !entry.leasing && now - entry.lastUsed >= idle {
            if entry.tokens > 0 {
                returned.append((key, entry.tokens))
                entries[key]?.tokens = 0
            }
            if let keep = entry.keepUntil, keep > now { continue }
            entries[key] = nil
        }
        return returned
    }

    /// Everything leased and not spent (the executor gives it back when it stops).
    mutating func drain() -> [(bucket: String, count: Int)] {
        defer { entries.removeAll() }
        return entries.compactMap { key, entry in entry.tokens > 0 ? (key, entry.tokens) : nil }
    }

    static func wholeSeconds(_ duration: Duration) -> Int {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return Int(min(max(seconds.rounded(.up), 1), 86_400))
    }
}
