import Synchronization
import Testing

@testable import OfferStore

/// Reads asked for at once, made together (``GroupRead``), on their own: what each caller gets, how many batches
/// run at once, and what a failed batch does.
@Suite struct GroupReadTests {
    /// A read that answers each request with its double, after a pause, counting the batches running at once.
    private final class Reads: Sendable {
        let running = Atomic<Int>(0)
        let mostRunning = Atomic<Int>(0)
        let batches = Mutex<[Int]>([])
        let failing = Atomic<Bool>(false)

        func read(_ requests: [Int]) async throws -> [Int] {
            let now = running.wrappingAdd(1, ordering: .relaxed).newValue
            mostRunning.max(now, ordering: .relaxed)
            defer { running.wrappingSubtract(1, ordering: .relaxed) }
            batches.withLock { $0.append(requests.count) }
            try await Task.sleep(for: .milliseconds(5))
            if failing.load(ordering: .relaxed) { throw OfferStoreError(.unavailable, "down") }
            return requests.map { $0 * 2 }
        }
    }

    @Test("500 reads at once: each caller gets its own answer, at most two batches run at once, and most reads share a batch")
    func readsTogether() async throws {
        let reads = Reads()
        let group = GroupRead<Int, Int>(maxInFlight: 2, maxBatch: 64) { try await reads.read($0) }
        let answers = try await withThrowingTaskGroup(of: (Int, Int).self) { tasks in
            for request in 0..<500 { tasks.addTask { (request, try await group.answer(request)) } }
            return try await tasks.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 500 && answers.allSatisfy { $0.value == $0.key * 2 })
        #expect(reads.mostRunning.load(ordering: .relaxed) <= 2)
        let batches = reads.batches.withLock { $0 }
        #expect(batches.reduce(0, +) == 500 && batches.allSatisfy { $0 <= 64 })
        #expect(batches.count < 100, "batches: \(batches)")
        #expect(group.largestBatch > 1)
    }

    @Test("one read alone is made at once by its caller; a failed batch fails its callers, and the next reads are made")
    func failureEndsTheBatch() async throws {
        let reads = Reads()
        let group = GroupRead<Int, Int>(maxInFlight: 1, maxBatch: 8) { try await reads.read($0) }
        #expect(try await group.answer(21) == 42)
        #expect(reads.batches.withLock { $0 } == [1])
        reads.failing.store(true, ordering: .relaxed)
        let failed = await withTaskGroup(of: Bool.self) { tasks in
            for request in 0..<20 { tasks.addTask { (try? await group.answer(request)) == nil } }
            return await tasks.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(failed == 20)
        reads.failing.store(false, ordering: .relaxed)
        let answers = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for request in 0..<20 { tasks.addTask { try await group.answer(request) } }
            return try await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.sorted() == (0..<20).map { $0 * 2 })
        #expect(reads.mostRunning.load(ordering: .relaxed) == 1)
    }

    /// Holds of one resource, counted: how many, how many batches each read, and what each saw thrown.
    private final class Holds: Sendable {
        let batchesPerHold = Mutex<[Int]>([])
        let thrown = Mutex<[String]>([])
        let refusing = Atomic<Bool>(false)

        func hold(_ batches: @Sendable (_ read: GroupRead<Int, Int>.Read) async throws -> Void, reads: Reads) async throws {
            if refusing.load(ordering: .relaxed) { throw OfferStoreError(.unavailable, "no connection") }
            let count = Atomic<Int>(0)
            defer { batchesPerHold.withLock { $0.append(count.load(ordering: .relaxed)) } }
            do {
                try await batches { requests in
                    count.add(1, ordering: .relaxed)
                    return try await reads.read(requests)
                }
            } catch {
                thrown.withLock { $0.append((error as? OfferStoreError)?.message ?? "?") }
                throw error
            }
        }

        /// A group of one batch in flight, of at most 4 reads, whose waiting reads are read on holds counted here.
        func group(reading reads: Reads) -> GroupRead<Int, Int> {
            GroupRead<Int, Int>(
                maxInFlight: 1,
                maxBatch: 4,
                holding: { try await self.hold($0, reads: reads) },
                read: { try await reads.read($0) }
            )
        }
    }

    @Test("reads that waited are read on holds of one resource, many batches a hold, never more than a hold's most or its time allows")
    func holdsServeManyBatches() async throws {
        let reads = Reads()
        let holds = Holds()
        let group = holds.group(reading: reads)
        let answers = try await withThrowingTaskGroup(of: (Int, Int).self) { tasks in
            for request in 0..<400 { tasks.addTask { (request, try await group.answer(request)) } }
            return try await tasks.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(answers.count == 400 && answers.allSatisfy { $0.value == $0.key * 2 })
        #expect(reads.mostRunning.load(ordering: .relaxed) == 1)
        let perHold = holds.batchesPerHold.withLock { $0 }
        let batches = reads.batches.withLock { $0 }
        // The reads alone (by their callers) are not on a hold; the rest are.
        #expect(perHold.reduce(0, +) < batches.count)
        #expect(perHold.allSatisfy { $0 <= GroupRead<Int, Int>.batchesPerHold })
        // A batch takes at least 5 ms: within a hold's 50 ms budget at most ten start, and the one under way ends.
        #expect(perHold.allSatisfy { $0 <= 11 }, "batches a hold: \(perHold)")
        #expect(perHold.contains { $0 > 1 }, "batches a hold: \(perHold)")
        #expect(perHold.count < perHold.reduce(0, +))
    }

    @Test("a batch that fails on a hold fails its callers alone and ends the hold, which sees the error; a hold refused fails the next batch")
    func failureEndsTheHold() async throws {
        let reads = Reads()
        let holds = Holds()
        let group = holds.group(reading: reads)
        let burst = { @Sendable () async -> Int in
            await withTaskGroup(of: Bool.self) { tasks in
                for request in 0..<40 { tasks.addTask { (try? await group.answer(request)) == request * 2 } }
                return await tasks.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
        }
        reads.failing.store(true, ordering: .relaxed)
        #expect(await burst() == 0)
        // Every hold ended at its first batch (or found none waiting), and saw that batch's error.
        let perHold = holds.batchesPerHold.withLock { $0 }
        #expect(perHold.contains(1) && perHold.allSatisfy { $0 <= 1 })
        #expect(holds.thrown.withLock { $0 }.allSatisfy { $0 == "down" } && holds.thrown.withLock { $0.count } == perHold.filter { $0 == 1 }.count)
        reads.failing.store(false, ordering: .relaxed)
        holds.refusing.store(true, ordering: .relaxed)
        let answered = await burst()
        // Reads alone are made by their callers; those that waited met the refused hold.
        #expect(answered < 40)
        holds.refusing.store(false, ordering: .relaxed)
        #expect(await burst() == 40)
    }
}
