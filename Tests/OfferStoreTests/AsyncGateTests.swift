import Dispatch
import Foundation
import OfferModel
import Synchronization
import Testing

@testable import OfferStore

/// The write gate shared by tasks (sqlite-nio's writer) and a blocking thread (the SQLite log writer's queue).
@Suite struct AsyncGateTests {
    /// Counts holders at once; records the most seen.
    final class Occupancy: Sendable {
        private let state = Mutex((now: 0, most: 0, entries: 0))
        func enter() {
            state.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
                $0.entries += 1
            }
        }
        func leave() { state.withLock { $0.now -= 1 } }
        var most: Int { state.withLock { $0.most } }
        var entries: Int { state.withLock { $0.entries } }
    }

    @Test("tasks and blocked threads hold the gate one at a time, and every one of them gets it")
    func oneHolderAtATime() async throws {
        let gate = AsyncGate()
        let occupancy = Occupancy()
        let queues = (0..<4).map { DispatchQueue(label: "gate-test-\($0)") }
        let threadsDone = DispatchGroup()
        for queue in queues {
            for _ in 0..<50 {
                threadsDone.enter()
                queue.async {
                    gate.withGateBlocking {
                        occupancy.enter()
                        usleep(20)
                        occupancy.leave()
                    }
                    threadsDone.leave()
                }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await gate.withGate {
                        occupancy.enter()
                        await Task.yield()
                        occupancy.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        await withCheckedContinuation { continuation in threadsDone.notify(queue: .global()) { continuation.resume() } }
        #expect(occupancy.most == 1)
        #expect(occupancy.entries == 400)
    }

    @Test("a gate of three permits has at most three holders at once, and every waiter gets it")
    func permits() async throws {
        let gate = AsyncGate(permits: 3)
        let occupancy = Occupancy()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await gate.withGate {
                        occupancy.enter()
                        try await Task.sleep(for: .milliseconds(1))
                        occupancy.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(occupancy.most == 3)
        #expect(occupancy.entries == 200)
    }

    @Test("a thread waiting for the gate a task holds goes on only when the task releases it")
    func threadWaitsForTask() async throws {
        let gate = AsyncGate()
        let order = Mutex<[String]>([])
        await gate.acquire()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue(label: "gate-test-waiter").async {
            gate.withGateBlocking { order.withLock { $0.append("thread") } }
            done.signal()
        }
        try await Task.sleep(for: .milliseconds(50))
        order.withLock { $0.append("task") }
        gate.release()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                done.wait()
                continuation.resume()
            }
        }
        #expect(order.withLock { $0 } == ["task", "thread"])
    }

    @Test("a task's bounded wait for the gate ends at its limit without the gate; the next waiter still gets it in turn")
    func boundedWaitEnds() async throws {
        let gate = AsyncGate()
        await gate.acquire()
        let start = ContinuousClock.now
        let bounded = Task { await gate.acquire(within: .milliseconds(100)) }
        let unbounded = Task { await gate.acquire(within: nil) }
        #expect(await bounded.value == false)
        let waited = ContinuousClock.now - start
        // Ends at its limit, not when the gate is released (which here is never, until after): the upper bound is
        // generous, as the whole suite beside it can delay a timer by seconds on two cores.
        #expect(waited >= .milliseconds(90) && waited < .seconds(30), "waited \(waited)")
        gate.release()
        #expect(await unbounded.value == true)  // the gate went to the waiter still queued
        await #expect(throws: AsyncGateTimedOut.self) { try await gate.withGate(within: .milliseconds(10)) {} }
        gate.release()
        #expect(try await gate.withGate(within: .milliseconds(10)) { 7 } == 7)
    }
}
