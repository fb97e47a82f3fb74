import Foundation
import Synchronization

/// The answers of the last minutes, kept in this process for the console's overview (docs/console.md): how many,
/// how many were errors (5xx, 4xx), and their durations in a few buckets. One slot per minute in a ring of 16,
/// counted with relaxed atomics so that recording costs the hot path a few increments and no lock. A slot is
/// emptied by the first answer of its new minute; an answer counted in the instant of that change may be lost,
/// which the console's rounded figures can afford (the exact counts are in `/metrics`).
enum RequestTally {
    /// The upper bounds of the duration buckets, in milliseconds; a last bucket takes the slower answers.
    static let bucketBounds: [Int] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500]
    static let slotCount = 16

    /// When this process started counting (its first use of the tally: the server's start).
    static let startedAt = Date()

    /// One minute's counts.
    private final class Slot: Sendable {
        let minute = Atomic<Int>(-1)
        let answered = Atomic<Int>(0)
        let serverErrors = Atomic<Int>(0)
        let clientErrors = Atomic<Int>(0)
        let buckets: [Count] = (0...RequestTally.bucketBounds.count).map { _ in Count() }

        func reset(to minute: Int, from seen: Int) {
            guard self.minute.compareExchange(expected: seen, desired: minute, ordering: .relaxed).exchanged else { return }
            answered.store(0, ordering: .relaxed)
            serverErrors.store(0, ordering: .relaxed)
            clientErrors.store(0, ordering: .relaxed)
            for bucket in buckets { bucket.value.store(0, ordering: .relaxed) }
        }
    }

    /// A count of its own (an array cannot hold atomics themselves).
    private final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    private static let slots: [Slot] = (0..<slotCount).map { _ in Slot() }

    /// The minute of `date` since 1970.
    static func minute(of date: Date) -> Int { Int(date.timeIntervalSince1970 / 60) }

    /// Counts one answer with its status and how long it took.
    static func record(status: Int, duration: Duration, at date: Date = Date()) {
        let minute = minute(of: date)
        let slot = slots[minute % slotCount]
        let seen = slot.minute.load(ordering: .relaxed)
        if seen != minute {
            guard seen < minute else { return }  // a late answer from a minute the ring has left
            slot.reset(to: minute, from: seen)
        }
        slot.answered.wrappingAdd(1, ordering: .relaxed)
        if status >= 500 {
            slot.serverErrors.wrappingAdd(1, ordering: .relaxed)
        } else if status >= 400 {
            slot.clientErrors.wrappingAdd(1, ordering: .relaxed)
        }
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        let index = bucketBounds.firstIndex { milliseconds <= Double($0) } ?? bucketBounds.count
        slot.buckets[index].value.wrappingAdd(1, ordering: .relaxed)
    }

    /// What the answers of the last `minutes` (the current one included, at most ``slotCount`` - 1) add up to.
    static func summary(minutes: Int, now: Date = Date()) -> Summary {
        let current = minute(of: now)
        let span = min(max(minutes, 1), slotCount - 1)
        var summary = Summary(
            minutes: span,
            answered: 0,
            serverErrors: 0,
            clientErrors: 0,
            buckets: Array(repeating: 0, count: bucketBounds.count + 1)
        )
        for minute in (current - span + 1)...current {
            let slot = slots[minute % slotCount]
            guard slot.minute.load(ordering: .relaxed) == minute else { continue }
            summary.answered += slot.answered.load(ordering: .relaxed)
            summary.serverErrors += slot.serverErrors.load(ordering: .relaxed)
            summary.clientErrors += slot.clientErrors.load(ordering: .relaxed)
            for (index, bucket) in slot.buckets.enumerated() { summary.buckets[index] += bucket.value.load(ordering: .relaxed) }
        }
        return summary
    }

    /// The answers of a span of minutes.
    struct Summary: Sendable, Equatable {
        var minutes: Int
        var answered: Int
        /// Answers with a status of 500 or more.
        var serverErrors: Int
        /// Answers with a status from 400 to 499.
        var clientErrors: Int
        /// Answers per duration bucket (``RequestTally/bucketBounds``, then the slower ones).
        var buckets: [Int]

        /// The share of answers that were server errors, `nil` without answers.
        var serverErrorRate: Double? { answered > 0 ? Double(serverErrors) / Double(answered) : nil }

        /// The bound (ms) under which `fraction` of the answers took; `nil` without answers, `Int.max` past the last bound.
        func durationBound(below fraction: Double) -> Int? {
            let total = buckets.reduce(0, +)
            guard total > 0 else { return nil }
            let needed = Int((Double(total) * fraction).rounded(.up))
            var seen = 0
            for (index, count) in buckets.enumerated() {
                seen += count
                if seen >= needed { return index < RequestTally.bucketBounds.count ? RequestTally.bucketBounds[index] : Int.max }
            }
            return Int.max
        }
    }
}
