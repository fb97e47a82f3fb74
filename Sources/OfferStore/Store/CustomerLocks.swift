import OfferModel
import Synchronization

/// One decision at a time per customer within this process: the serialization point of a cap, a cool-down or a
/// grant when this process is the only one deciding for the store's customers (``CustomerLockingStore``).
///
/// A customer's lock is held from the read of their facts and signatures to the moment the signature it allowed is
/// durable, so the next decision for them reads it; other customers never wait. Waiters are served first come,
/// first served; the lock passes straight to the next waiter. A wait is not cancelled with its task (the holder
/// ends within one decision and one group commit).
public final class CustomerLocks: Sendable {
    /// The customers whose lock is held, each with the callers waiting for it, in order.
    private let held = Mutex<[CustomerKey: [CheckedContinuation<Void, Never>]]>([:])

    public init() {}

    /// Runs `body` holding `key`'s lock.
    public func withLock<T>(_ key: CustomerKey, _ body: () async throws -> T) async rethrows -> T {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    /// Takes `key`'s lock if no one holds it, without waiting; `true`: taken, and the caller ``unlock(_:)``s it
    /// exactly once (an event loop's decision, ``CustomerLockingStore/customerSnapshotAtOnce(_:issuedSince:)``).
    /// `false`: held (or waited for) by another decision, which goes first; nothing was taken.
    public func lockIfFree(_ key: CustomerKey) -> Bool {
        held.withLock { held in
            guard held[key] == nil else { return false }
            held[key] = []
            return true
        }
    }

    /// Releases the lock ``lockIfFree(_:)`` took, passing it to the first waiter.
    public func unlock(_ key: CustomerKey) {
        release(key)
    }

    /// How many customers' locks are held (tests).
    var heldCount: Int { held.withLock { $0.count } }

    private func acquire(_ key: CustomerKey) async {
        if lockIfFree(key) { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let freedMeanwhile = held.withLock { held -> Bool in
                guard held[key] != nil else {
                    held[key] = []
                    return true
                }
                held[key]?.append(continuation)
                return false
            }
            if freedMeanwhile { continuation.resume() }
        }
    }

    private func release(_ key: CustomerKey) {
        let next = held.withLock { held -> CheckedContinuation<Void, Never>? in
            guard var waiters = held[key], !waiters.isEmpty else {
                held[key] = nil
                return nil
            }
            let first = waiters.removeFirst()
            held[key] = waiters
            return first
        }
        next?.resume()
    }
}

/// A store that can serialize one customer's decisions without a write transaction per decision. ``customerLocks``
/// is this process's lock per customer, under which a decision reads the customer
/// (``customerSnapshot(_:issuedSince:)``) and its signature goes through the group commit
/// (``record(_:decidedOver:)``). Where this process is the only one deciding for its customers (a SQLite file a
/// server holds: ``SQLiteFileLock``; a store in memory), the lock is the whole serialization point. On PostgreSQL,
/// shared by replicas, the batch that records the signature checks, in its own transaction and under a lock per
/// customer that every replica takes, that no signature of the customer was committed since the decision's read;
/// a record whose check fails is not written, and the decision is made again. `nil`: other processes may decide
/// for the same customers without such a check (a file the tools opened), and a decision that reads issued
/// signatures runs in ``OfferStore/withCustomerTransaction(_:issuedSince:answerKey:_:)``.
public protocol CustomerLockingStore: OfferStore {
    /// The in-process lock per customer, when it is enough; `nil` otherwise.
    var customerLocks: CustomerLocks? { get }

    /// The customer's facts (`nil`: never heard of), the JSON text they were decoded from (`nil` where the store
    /// keeps none), and their issued signatures since `since` (Unix ms), newest first, read together.
    func customerSnapshot(_ key: CustomerKey, issuedSince since: Int64) async throws -> CustomerLockSnapshot

    /// Records `record` through the group commit, durably, unless the customer's signatures since `read.since` are
    /// no longer the `read.count` the decision read (another replica recorded one meanwhile): then nothing is
    /// written and this returns `false` — the signature must never be shown, and the decision is made again.
    /// Where this process alone decides, the customer's lock makes the check needless: always `true` once durable.
    func record(_ record: IssuedSignature, decidedOver read: IssuedRead) async throws -> Bool

    /// ``customerSnapshot(_:issuedSince:)`` on the caller's thread, without suspending, when the store can read so
    /// at once (a SQLite file with a reader free: pages from the OS's cache, tens of microseconds); `nil` when it
    /// cannot (every reader in use, a store across the network) — nothing was read, the caller waits for
    /// ``customerSnapshot(_:issuedSince:)`` instead.
    func customerSnapshotAtOnce(_ key: CustomerKey, issuedSince since: Int64) -> Result<CustomerLockSnapshot, any Error>?
}

/// What a decision read of a customer's issued signatures: how many since a time (``CustomerLockSnapshot/issued``).
public struct IssuedRead: Sendable, Hashable {
    /// The customer.
    public var customer: CustomerKey
    /// The time the read began at (Unix ms).
    public var since: Int64
    /// How many signatures since `since` it found.
    public var count: Int

    public init(customer: CustomerKey, since: Int64, count: Int) {
        self.customer = customer
        self.since = since
        self.count = count
    }
}

/// What a decision under a customer's lock reads (``CustomerLockingStore/customerSnapshot(_:issuedSince:)``).
public struct CustomerLockSnapshot: Sendable {
    /// The customer's facts; `nil`: never heard of.
    public var facts: CustomerFacts?
    /// The stored JSON text `facts` was decoded from (sorted keys, dates in ms); `nil` when there is none.
    public var storedFacts: String?
    /// Their issued signatures since the time asked, newest first.
    public var issued: [IssuedSignature]

    public init(facts: CustomerFacts?, storedFacts: String?, issued: [IssuedSignature]) {
        self.facts = facts
        self.storedFacts = storedFacts
        self.issued = issued
    }
}
