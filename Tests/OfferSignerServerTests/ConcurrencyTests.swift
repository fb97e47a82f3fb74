import AppStoreTestSupport
import Foundation
import Logging
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// Promises that must hold under concurrency (issue 11): a cap of 1 and a single grant yield one signature,
/// on one replica and on two sharing PostgreSQL; key states never lose a change.
@Suite struct ConcurrencyTests {
    /// A store a race runs on: each backend as the tests open it (decisions in a customer transaction), and a SQLite
    /// file held as a server holds it (``SQLiteFileLock``: decisions under the customer's in-process lock, records
    /// through the group commit).
    struct RaceStore: Sendable, CustomTestStringConvertible {
        var backend: StoreBackend
        var exclusive: Bool
        static var all: [RaceStore] {
            StoreBackend.available.map { RaceStore(backend: $0, exclusive: false) } + [RaceStore(backend: .sqlite, exclusive: true)]
        }
        var testDescription: String { exclusive ? "sqlite (held by the server)" : backend.rawValue }
    }

    /// How a storm's requests enter the application.
    enum Door: Sendable, CustomTestStringConvertible {
        /// The pipeline that waits (the router's).
        case pipeline
        /// The event-loop path's step (``Signing/prepareSigning(_:)``): decided at once under the customer's lock
        /// when it is free and the store reads at once, else the pipeline; every request of a storm that way.
        case eventLoopStep
        var testDescription: String { self == .pipeline ? "the pipeline" : "the event loop's step" }
    }

    /// Runs `count` sign requests at once; returns how many were signed and how many refused as not eligible, and how
    /// many of the signed the event loop's step signed at once under the customer's lock.
    private func storm(
        _ services: [SigningPipeline],
        offer: String,
        customer: String,
        count: Int = 64,
        door: Door = .pipeline
    ) async -> (signed: Int, refused: Int, other: [String], atOnce: Int) {
        await withTaskGroup(of: (String, Bool).self) { group in
            for index in 0..<count {
                let signing = services[index % services.count].signing
                let request = SignOfferRequest(
                    productIdentifier: TestPayloads.productIdentifier,
                    offerIdentifier: offer,
                    applicationUsername: customer
                )
                group.addTask {
                    var atOnce = false
                    do {
                        switch door {
                        case .pipeline: _ = try await signing.signLegacy(request)
                        case .eventLoopStep: atOnce = try await Self.throughTheEventLoopStep(request, signing)
                        }
                        return ("signed", atOnce)
                    } catch let error as OfferServiceError {
                        return (error.code.rawValue, false)
                    } catch {
                        return ("\(error)", false)
                    }
                }
            }
            var signed = 0
            var refused = 0
            var other: [String] = []
            var atOnce = 0
            for await (outcome, decidedAtOnce) in group {
                switch outcome {
                case "signed": signed += 1
                case "not_eligible": refused += 1
                default: other.append(outcome)
                }
                if decidedAtOnce { atOnce += 1 }
            }
            return (signed, refused, other, atOnce)
        }
    }

    /// Signs as ``EventLoopSigning`` does, without the transport: the step at once, its record committed before the
    /// answer; a request the step hands on, through the pipeline. `true`: signed at once under the customer's lock.
    private static func throughTheEventLoopStep(_ request: SignOfferRequest, _ signing: Signing) async throws -> Bool {
        switch try signing.prepareSigning(request) {
        case .signed(let sign):
            let signed = try sign()
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                signing.commit(signed.record) { continuation.resume(with: $0.mapError { $0 as any Error }) }
            }
            return false
        case .signedHolding(let held):
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                signing.commit(held) { continuation.resume(with: $0.mapError { $0 as any Error }) }
            }
            return true
        case .pipeline(let prepared):
            _ = try await signing.sign(prepared)
            return false
        }
    }

    /// Rounds of each race, a fresh customer each: a lost race is rare, so it is run many times over.
    private static let rounds = 10

    @Test(
        "64 concurrent requests for an offer capped at 1 produce exactly one signature, ten times over; every decision is logged",
        arguments: RaceStore.all,
        [Door.pipeline, .eventLoopStep]
    )
    func capOfOneHolds(_ race: RaceStore, _ door: Door) async throws {
        let fixture = try await StoreFixture(race.backend, exclusive: race.exclusive)
        var atOnce = 0
        for round in 0..<Self.rounds {
            let outcome = await storm([fixture.service], offer: "once", customer: "racer-\(round)", door: door)
            atOnce += outcome.atOnce
            #expect(outcome.signed == 1, "round \(round)")
            #expect(outcome.refused == 63, "round \(round)")
            #expect(outcome.other.isEmpty, "\(outcome.other)")
            let recorded = try await fixture.store.countIssuedSignatures(
                matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, applicationUsername: "racer-\(round)", offerIdentifier: "once")
            )
            #expect(recorded == 1, "round \(round)")
        }
        await fixture.store.flushDecisionLog()
        let logged = try await fixture.store.policyDecisions(bundleIdentifiers: [fixture.bundle], since: 0, until: .max, after: nil, limit: 10_000)
        #expect(logged.count == 64 * Self.rounds)
        #expect(logged.filter(\.granted).count == Self.rounds)
        // Only a SQLite file the server holds decides at once under the lock; the step must then be taken.
        if door == .eventLoopStep && race.exclusive { #expect(atOnce > 0) } else { #expect(atOnce == 0) }
        try await fixture.store.close()
    }

    @Test(
        "a customer-service grant is spent once by 64 concurrent requests, ten times over",
        arguments: RaceStore.all,
        [Door.pipeline, .eventLoopStep]
    )
    func grantIsSpentOnce(_ race: RaceStore, _ door: Door) async throws {
        let fixture = try await StoreFixture(race.backend, exclusive: race.exclusive)
        for round in 0..<Self.rounds {
            let key = CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "unlucky-\(round)")
            try await fixture.store.updateCustomer(key) { facts in
                facts.grants.append(
                    CustomerServiceGrant(
                        productIdentifier: TestPayloads.productIdentifier,
                        offerIdentifier: "sorry",
                        grantedBy: "carol",
                        expiresAt: Date().addingTimeInterval(86_400)
                    )
                )
            }
            let outcome = await storm([fixture.service], offer: "sorry", customer: key.applicationUsername, door: door)
            // A decision that spends a grant is never made at once: it is a transaction of its own.
            #expect(outcome.atOnce == 0)
            #expect(outcome.signed == 1, "round \(round)")
            #expect(outcome.refused == 63, "round \(round)")
            #expect(outcome.other.isEmpty, "\(outcome.other)")
            let facts = try #require(try await fixture.store.customerFacts(for: key))
            #expect(facts.grants.count == 1 && facts.grants[0].usedAt != nil)
            #expect(
                try await fixture.store.countIssuedSignatures(
                    matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, applicationUsername: key.applicationUsername)
                ) == 1
            )
        }
        try await fixture.store.close()
    }

    @Test(
        "two replicas sharing PostgreSQL: a cap of 1 and a grant still yield one signature each under 64 concurrent requests, ten times over",
        .enabled(if: StoreBackend.postgresURL != nil)
    )
    func twoReplicasShareTheCap() async throws {
        let first = try await StoreFixture(.postgres)
        let second = try await StoreFixture(.postgres, replicaOf: first)
        for round in 0..<Self.rounds {
            let capped = await storm([first.service, second.service], offer: "once", customer: "racer-\(round)")
            #expect(capped.signed == 1 && capped.refused == 63, "round \(round): \(capped)")
            let key = CustomerKey(bundleIdentifier: first.bundle, applicationUsername: "unlucky-\(round)")
            try await first.store.updateCustomer(key) { facts in
                facts.grants.append(
                    CustomerServiceGrant(
                        productIdentifier: TestPayloads.productIdentifier,
                        offerIdentifier: "sorry",
                        grantedBy: "carol",
                        expiresAt: Date().addingTimeInterval(86_400)
                    )
                )
            }
            let granted = await storm([first.service, second.service], offer: "sorry", customer: key.applicationUsername)
            #expect(granted.signed == 1 && granted.refused == 63, "round \(round): \(granted)")
        }
        try await first.store.close()
        try await second.store.close()
    }

    // MARK: key states

    private static func keys(_ count: Int) throws -> [KeyRing.Entry] {
        try (0..<count).map { KeyRing.Entry(key: try SigningKey.generate(keyIdentifier: "KEY\($0)"), source: "test") }
    }

    @Test("concurrent admin calls on one replica never lose a revoke")
    func concurrentRevokesOnOneReplica() async throws {
        let entries = try Self.keys(8)
        let holder = KeyRingHolder(.empty)
        let states = InMemoryKeyStateStore()
        let manager = try await KeyManager(
            holder: holder,
            loadKeys: { entries },
            configuredActiveKeyIdentifier: "KEY0",
            stateStore: states,
            logger: Logger(label: "test")
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 1..<7 { group.addTask { _ = try await manager.revoke("KEY\(index)", by: "alice") } }
            group.addTask { _ = try await manager.activate("KEY7", by: "bob") }
            try await group.waitForAll()  // every call succeeds: a refused one fails the test with its error
        }
        let saved = try await states.load()
        #expect(saved.revokedKeyIdentifiers == Set((1..<7).map { "KEY\($0)" }))
        #expect(saved.activeKeyIdentifier == "KEY7")
        #expect(saved.version == 7)
        for index in 1..<7 { #expect(holder.current.state(of: "KEY\(index)") == .revoked) }
        #expect(holder.current.activeKeyIdentifier == "KEY7")
    }

    @Test(
        "two replicas: one revokes while the other activates, repeatedly; no revoke is lost, a revoked key never signs",
        arguments: StoreBackend.available
    )
    func revokeWhileAnotherReplicaActivates(_ backend: StoreBackend) async throws {
        let storeA = try await backend.open()
        let storeB = backend == .postgres ? try await backend.open() : storeA
        let document = "key-states-test-\(UUID().uuidString)"
        let entries = try Self.keys(7)
        func replica(_ store: any OfferStore) async throws -> (KeyRingHolder, KeyManager) {
            let holder = KeyRingHolder(.empty)
            let manager = try await KeyManager(
                holder: holder,
                loadKeys: { entries },
                configuredActiveKeyIdentifier: "KEY0",
                stateStore: StoreKeyStateStore(store: store, documentName: document),
                logger: Logger(label: "test")
            )
            return (holder, manager)
        }
        let (holderA, managerA) = try await replica(storeA)
        let (holderB, managerB) = try await replica(storeB)
        for round in 1..<7 {
            // B activates KEY<round> while A revokes KEY<round-1>; A's revoke is refused (409) while the key is
            // still active in the saved states, and retried until B's activation is saved.
            async let activation: KeyRing = managerB.activate("KEY\(round)", by: "bob")
            var revoked = false
            for _ in 0..<200 where !revoked {
                do {
                    _ = try await managerA.revoke("KEY\(round - 1)", by: "alice")
                    revoked = true
                } catch let error as KeyManagementError where error.code == .keyStateConflict {
                    try await Task.sleep(for: .milliseconds(5))
                }
            }
            _ = try await activation
            #expect(revoked)
            // Neither replica signs with a revoked key once it has refreshed (within its refresh interval).
            await managerA.refreshStates()
            await managerB.refreshStates()
            for holder in [holderA, holderB] {
                let key = try holder.current.activeKey()
                #expect(key.keyIdentifier == "KEY\(round)")
                for old in 0..<round { #expect(holder.current.state(of: "KEY\(old)") == .revoked) }
            }
        }
        let saved = try await StoreKeyStateStore(store: storeA, documentName: document).load()
        #expect(saved.revokedKeyIdentifiers == Set((0..<6).map { "KEY\($0)" }))
        #expect(saved.activeKeyIdentifier == "KEY6")
        try await storeA.close()
        if backend == .postgres { try await storeB.close() }
    }

    /// Returns an older saved version than the one already served, as a replica reading a lagging copy would.
    actor LaggingStateStore: KeyStateStore {
        var states = KeyStates()
        var lag = false
        func load() async throws -> KeyStates { lag ? KeyStates(version: 1, activeKeyIdentifier: "KEY0") : states }
        func save(_ next: KeyStates) async throws -> Bool {
            guard next.version == states.version + 1 else { return false }
            states = next
            return true
        }
        func startLagging() { lag = true }
    }

    @Test("a refresh never moves a key's state backwards")
    func refreshNeverStepsBack() async throws {
        let entries = try Self.keys(3)
        let holder = KeyRingHolder(.empty)
        let states = LaggingStateStore()
        let manager = try await KeyManager(
            holder: holder,
            loadKeys: { entries },
            configuredActiveKeyIdentifier: "KEY0",
            stateStore: states,
            logger: Logger(label: "test")
        )
        _ = try await manager.activate("KEY1", by: "alice")
        _ = try await manager.revoke("KEY0", by: "alice")
        await states.startLagging()
        #expect(await !manager.refreshStates())
        #expect(holder.current.state(of: "KEY0") == .revoked)
        #expect(holder.current.activeKeyIdentifier == "KEY1")
    }
}
