import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Synchronization
import Testing

struct AdminKeys: Decodable {
    struct Key: Decodable {
        var keyIdentifier: String
        var state: String
        var fingerprint: String
        var source: String
        /// Unix milliseconds, as every timestamp of the API; absent for a revoked key whose file was removed.
        var loadedAt: Int64?
        var signaturesIssued: Int
    }
    var activeKeyIdentifier: String?
    var keys: [Key]

    func state(of keyIdentifier: String) -> String? { keys.first { $0.keyIdentifier == keyIdentifier }?.state }
}

/// A keys folder on disk, an SigningPipeline and a KeyManager reading it, and an admin token.
struct RotationFixture {
    static let token = "alice-token-0123456789abcdef"
    let directory: URL
    let service: SigningPipeline
    let manager: KeyManager
    let stateFile: String
    var keys: [String: SigningKey] = [:]

    init(initialKeys: [String] = ["OLDKEY0001"], active: String? = nil, stateFile: String? = nil) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("offer-signer-rotation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.stateFile = stateFile ?? directory.appendingPathComponent("state.json").path + ".d"
        for keyIdentifier in initialKeys {
            keys[keyIdentifier] = try Self.writeKey(keyIdentifier, into: directory)
        }
        let folder = directory.path
        let loadKeys: KeyManager.KeyLoading = { try KeyLoader.loadDirectory(folder) }
        let entries = try loadKeys()
        service = SigningPipeline(
            apps: [AppConfiguration(bundleIdentifier: "com.example.app", issuerIdentifier: "issuer")],
            keyRing: try KeyRing(keys: entries, activeKeyIdentifier: active)
        )
        manager = try await KeyManager(
            holder: service.keys,
            loadKeys: loadKeys,
            configuredActiveKeyIdentifier: active,
            stateStore: FileKeyStateStore(path: self.stateFile),
            logger: Logger(label: "test")
        )
    }

    @discardableResult
    static func writeKey(_ keyIdentifier: String, into directory: URL) throws -> SigningKey {
        let key = try SigningKey.generate(keyIdentifier: keyIdentifier)
        try key.pkcs8PEMRepresentation.write(
            to: directory.appendingPathComponent("SubscriptionKey_\(keyIdentifier).p8"),
            atomically: true,
            encoding: .utf8
        )
        return key
    }

    var application: some ApplicationProtocol {
        Application(
            router: buildRouter(
                useCases: OfferSignerUseCases(pipeline: service, keyManager: manager),
                adminTokens: try! BearerTokens(parsing: "alice:\(Self.token),bob:bob-token-0123456789abcdef")
            ),
            logger: Logger(label: "test")
        )
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }
}

extension TestClientProtocol {
    func admin(_ method: HTTPRequest.Method, _ uri: String, token: String? = RotationFixture.token) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await execute(uri: uri, method: method, headers: headers)
    }
}

@Suite struct AdminAuthenticationTests {
    @Test func noTokenIs401AWrongTokenIs403AndARightTokenPasses() async throws {
        let fixture = try await RotationFixture()
        defer { fixture.cleanUp() }
        try await fixture.application.test(.router) { client in
            let none = try await client.admin(.get, "/admin/keys", token: nil)
            #expect(none.status == .unauthorized)
            #expect(none.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
            #expect(try none.decode(ErrorBody.self).error.code == "unauthorized")
            let wrong = try await client.admin(.get, "/admin/keys", token: "not-the-token-0123456789")
            #expect(wrong.status == .forbidden)
            #expect(try wrong.decode(ErrorBody.self).error.code == "forbidden")
            let right = try await client.admin(.get, "/admin/keys")
            #expect(right.status == .ok)
            let keys = try right.decode(AdminKeys.self)
            #expect(keys.keys.map(\.keyIdentifier) == ["OLDKEY0001"])
            #expect(keys.keys[0].source.contains("SubscriptionKey_OLDKEY0001.p8"))
            #expect(!right.text.contains("PRIVATE"))
        }
    }

    @Test func withoutConfiguredTokensTheAdminAPIRefusesEveryone() async throws {
        let fixture = try await RotationFixture()
        defer { fixture.cleanUp() }
        let app = Application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: fixture.service, keyManager: fixture.manager)),
            logger: Logger(label: "t")
        )
        try await app.test(.router) { client in
            let response = try await client.admin(.get, "/admin/keys")
            #expect(response.status == .forbidden)
        }
    }

    @Test func tokensAreParsedAndShortOnesRefused() throws {
        let tokens = try BearerTokens(parsing: "alice:aaaaaaaaaaaaaaaa1, bob:bbbbbbbbbbbbbbbb2")
        #expect(tokens.admin(presenting: "aaaaaaaaaaaaaaaa1") == "alice")
        #expect(tokens.admin(presenting: "bbbbbbbbbbbbbbbb2") == "bob")
        // A token without a name is refused: the name is what logs and the audit show.
        let unnamed = #expect(throws: ConfigurationError.self) { try BearerTokens(parsing: "alice:aaaaaaaaaaaaaaaa1, bbbbbbbbbbbbbbbb2") }
        #expect(unnamed?.message.contains("entry 2 has no name") == true)
        #expect(tokens.admin(presenting: "aaaaaaaaaaaaaaaa") == nil)
        let error = #expect(throws: ConfigurationError.self) { try BearerTokens(parsing: "carol:short") }
        #expect(error?.message.contains("carol") == true)
        #expect(error?.message.contains("short") == true)  // "shorter than", not the token
        #expect(throws: ConfigurationError.self) { try BearerTokens(parsing: "a:aaaaaaaaaaaaaaaa1,a:bbbbbbbbbbbbbbbb2") }
    }
}

@Suite struct KeyStateTests {
    @Test func activateRetireRevokeAndTheirConflicts() async throws {
        var fixture = try await RotationFixture(initialKeys: ["OLDKEY0001", "NEWKEY0001"], active: "OLDKEY0001")
        defer { fixture.cleanUp() }
        fixture.keys["X"] = nil
        try await fixture.application.test(.router) { client in
            let unknown = try await client.admin(.post, "/admin/keys/NOPE/activate")
            #expect(unknown.status == .notFound)
            #expect(try unknown.decode(ErrorBody.self).error.code == "unknown_key")

            let revokeActive = try await client.admin(.post, "/admin/keys/OLDKEY0001/revoke")
            #expect(revokeActive.status == .conflict)
            #expect(try revokeActive.decode(ErrorBody.self).error.code == "key_state_conflict")
            let retireActive = try await client.admin(.post, "/admin/keys/OLDKEY0001/retire")
            #expect(retireActive.status == .conflict)

            let activated = try await client.admin(.post, "/admin/keys/NEWKEY0001/activate")
            #expect(activated.status == .ok)
            let afterActivate = try activated.decode(AdminKeys.self)
            #expect(afterActivate.activeKeyIdentifier == "NEWKEY0001")
            #expect(afterActivate.state(of: "OLDKEY0001") == "retired")

            let signed = try await client.post("/v1/offers/sign", json: SignRouteTests.validBody)
            #expect(try signed.decode(SignedLegacyOffer.self).keyIdentifier == "NEWKEY0001")

            let revoked = try await client.admin(.post, "/admin/keys/OLDKEY0001/revoke")
            #expect(try revoked.decode(AdminKeys.self).state(of: "OLDKEY0001") == "revoked")
            #expect(try await client.admin(.post, "/admin/keys/OLDKEY0001/activate").status == .conflict)
            #expect(try await client.admin(.post, "/admin/keys/OLDKEY0001/retire").status == .conflict)

            // The public list and the JWK Set follow.
            let published = try await client.execute(uri: "/v1/keys", method: .get).decode([PublishedKey].self)
            #expect(published.first { $0.keyIdentifier == "OLDKEY0001" }?.state == "revoked")
            let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get)
            #expect(!jwks.text.contains("OLDKEY0001"))

            let list = try await client.admin(.get, "/admin/keys").decode(AdminKeys.self)
            #expect(list.keys.first { $0.keyIdentifier == "NEWKEY0001" }?.signaturesIssued == 1)
        }
    }

    @Test func statesSurviveARestartWithTheirHistory() async throws {
        let fixture = try await RotationFixture(initialKeys: ["OLDKEY0001", "NEWKEY0001"], active: "OLDKEY0001")
        defer { fixture.cleanUp() }
        _ = try await fixture.manager.activate("NEWKEY0001", by: "alice")
        _ = try await fixture.manager.revoke("OLDKEY0001", by: "bob")

        // A new process: same folder, same state file, still OLDKEY0001 in the configuration.
        let folder = fixture.directory.path
        let holder = KeyRingHolder(.empty)
        let restarted = try await KeyManager(
            holder: holder,
            loadKeys: { try KeyLoader.loadDirectory(folder) },
            configuredActiveKeyIdentifier: "OLDKEY0001",
            stateStore: FileKeyStateStore(path: fixture.stateFile),
            logger: Logger(label: "test")
        )
        let ring = await restarted.keyRing
        #expect(ring.activeKeyIdentifier == "NEWKEY0001")
        #expect(ring.state(of: "OLDKEY0001") == .revoked)
        let history = await restarted.keyStates.history
        #expect(history.map(\.action) == ["activate", "revoke"])
        #expect(history.map(\.admin) == ["alice", "bob"])
        #expect(history.map(\.keyIdentifier) == ["NEWKEY0001", "OLDKEY0001"])
    }
}

@Suite struct KeyReloadTests {
    @Test("a revoked key whose file is removed stays known as revoked: listed, published, and its old bundles say key_revoked")
    func aRevokedKeyOutlivesItsFile() async throws {
        let fixture = try await RotationFixture(initialKeys: ["OLDKEY0001", "NEWKEY0001"], active: "OLDKEY0001")
        defer { fixture.cleanUp() }
        try await fixture.application.test(.router) { client in
            let old = try await client.post("/v1/offers/sign", json: SignRouteTests.validBody)
            #expect(try old.decode(SignedLegacyOffer.self).keyIdentifier == "OLDKEY0001")
            #expect(try await client.admin(.post, "/admin/keys/NEWKEY0001/activate").status == .ok)
            #expect(try await client.admin(.post, "/admin/keys/OLDKEY0001/revoke").status == .ok)
            // docs/key-rotation.md step 4: the leaked key's file is removed and the keys reloaded.
            try FileManager.default.removeItem(at: fixture.directory.appendingPathComponent("SubscriptionKey_OLDKEY0001.p8"))
            let reloaded = try await client.admin(.post, "/admin/keys/reload")
            #expect(reloaded.status == .ok, "\(reloaded.text)")
            let listed = try reloaded.decode(AdminKeys.self)
            #expect(listed.state(of: "OLDKEY0001") == "revoked")
            #expect(listed.keys.first { $0.keyIdentifier == "OLDKEY0001" }?.loadedAt == nil)
            let published = try await client.execute(uri: "/v1/keys", method: .get).decode([PublishedKey].self)
            #expect(published.first { $0.keyIdentifier == "OLDKEY0001" }?.state == "revoked")
            #expect(try await !client.execute(uri: "/.well-known/jwks.json", method: .get).text.contains("OLDKEY0001"))
            let verified = try await client.post("/v1/offers/verify", json: old.text)
            #expect(verified.text.contains("\"key_revoked\""), "\(verified.text)")
            // A key that was never loaded is still unknown.
            let other = try await client.post("/v1/offers/verify", json: old.text.replacingOccurrences(of: "OLDKEY0001", with: "NEVERKEY01"))
            #expect(other.text.contains("\"unknown_key\""), "\(other.text)")
        }
        // The restart reads it back from the states.
        let folder = fixture.directory.path
        let restarted = try await KeyManager(
            holder: KeyRingHolder(.empty),
            loadKeys: { try KeyLoader.loadDirectory(folder) },
            configuredActiveKeyIdentifier: nil,
            stateStore: FileKeyStateStore(path: fixture.stateFile),
            logger: Logger(label: "test")
        )
        let ring = await restarted.keyRing
        #expect(ring.state(of: "OLDKEY0001") == .revoked && ring.revokedKeysNotLoaded.map(\.keyIdentifier) == ["OLDKEY0001"])
    }

    @Test func aReloadPicksUpANewKeyFile() async throws {
        let fixture = try await RotationFixture()
        defer { fixture.cleanUp() }
        try RotationFixture.writeKey("NEWKEY0001", into: fixture.directory)
        try await fixture.application.test(.router) { client in
            let reloaded = try await client.admin(.post, "/admin/keys/reload")
            #expect(reloaded.status == .ok)
            let keys = try reloaded.decode(AdminKeys.self)
            #expect(keys.keys.map(\.keyIdentifier) == ["NEWKEY0001", "OLDKEY0001"])
            #expect(keys.activeKeyIdentifier == "OLDKEY0001")
            #expect(keys.state(of: "NEWKEY0001") == "retired")
        }
        #expect(await fixture.manager.keyStates.history.last?.action == "reload")
    }

    @Test("the key states keep their latest 100 changes: the document every replica reads at each change stays small")
    func historyIsBounded() async throws {
        let fixture = try await RotationFixture()
        defer { fixture.cleanUp() }
        for index in 0..<(KeyStates.historyLimit + 5) { try await fixture.manager.recordReload(by: "admin-\(index)") }
        let states = await fixture.manager.keyStates
        #expect(states.history.count == KeyStates.historyLimit)
        #expect(states.history.first?.admin == "admin-5")
        #expect(states.history.last?.admin == "admin-\(KeyStates.historyLimit + 4)")
    }

    struct BadChange: Sendable, CustomTestStringConvertible {
        let name: String
        let change: @Sendable (URL) throws -> Void
        let mentions: String
        var testDescription: String { name }
    }

    static let badChanges: [BadChange] = [
        BadChange(
            name: "a corrupt key file",
            change: { try "garbage".write(to: $0.appendingPathComponent("SubscriptionKey_BROKEN0001.p8"), atomically: true, encoding: .utf8) },
            mentions: "BROKEN0001"
        ),
        BadChange(
            name: "a P-384 key",
            change: { directory in
                let pem = P384.Signing.PrivateKey().pemRepresentation
                try pem.write(to: directory.appendingPathComponent("SubscriptionKey_P384KEY001.p8"), atomically: true, encoding: .utf8)
            },
            mentions: "P-384"
        ),
        BadChange(
            name: "the active key removed",
            change: { try FileManager.default.removeItem(at: $0.appendingPathComponent("SubscriptionKey_OLDKEY0001.p8")) },
            mentions: "OLDKEY0001"
        ),
    ]

    @Test("a bad key set is rejected whole and the old one keeps serving", arguments: badChanges)
    func aBadReloadIsAllOrNothing(_ bad: BadChange) async throws {
        let fixture = try await RotationFixture()
        defer { fixture.cleanUp() }
        try RotationFixture.writeKey("NEWKEY0001", into: fixture.directory)  // a good change alongside the bad one
        try bad.change(fixture.directory)
        try await fixture.application.test(.router) { client in
            let reloaded = try await client.admin(.post, "/admin/keys/reload")
            #expect(reloaded.status == .unprocessableContent)
            let error = try reloaded.decode(ErrorBody.self).error
            #expect(error.code == "key_reload_failed")
            #expect(error.message.contains(bad.mentions))
            #expect(!reloaded.text.contains("-----END"))
            let keys = try await client.admin(.get, "/admin/keys").decode(AdminKeys.self)
            #expect(keys.keys.map(\.keyIdentifier) == ["OLDKEY0001"])  // not even the good new key
            let signed = try await client.post("/v1/offers/sign", json: SignRouteTests.validBody)
            #expect(signed.status == .ok)
        }
    }

    @Test func theFolderWatcherFollowsAKubernetesSecretUpdate() async throws {
        // Kubernetes layout: ..2026_A/ holds the files, ..data -> ..2026_A, SubscriptionKey_X.p8 -> ..data/SubscriptionKey_X.p8
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("offer-signer-k8s-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let first = root.appendingPathComponent("..2026_11_22_10_00_00.1")
        try FileManager.default.createDirectory(at: first, withIntermediateDirectories: true)
        let old = try RotationFixture.writeKey("OLDKEY0001", into: first)
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("..data").path, withDestinationPath: first.lastPathComponent)
        func link(_ keyIdentifier: String) throws {
            try FileManager.default.createSymbolicLink(
                atPath: root.appendingPathComponent("SubscriptionKey_\(keyIdentifier).p8").path,
                withDestinationPath: "..data/SubscriptionKey_\(keyIdentifier).p8"
            )
        }
        try link("OLDKEY0001")
        let folder = root.path
        let holder = KeyRingHolder(.empty)
        let manager = try await KeyManager(
            holder: holder,
            loadKeys: { try KeyLoader.loadDirectory(folder) },
            configuredActiveKeyIdentifier: nil,
            stateStore: InMemoryKeyStateStore(),
            logger: Logger(label: "test")
        )
        #expect(holder.current.entries.map(\.key.fingerprint) == [old.fingerprint])
        #expect(holder.current.activeKeyIdentifier == "OLDKEY0001")  // the only key

        let watcher = KeyDirectoryWatcher(directory: folder, interval: .milliseconds(50), manager: manager)
        let watching = Task { try await watcher.run() }
        defer { watching.cancel() }

        // The update: a new generation with the old key and a new one, then ..data swapped in one rename.
        let second = root.appendingPathComponent("..2026_11_22_10_05_00.2")
        try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true)
        try old.pkcs8PEMRepresentation.write(to: second.appendingPathComponent("SubscriptionKey_OLDKEY0001.p8"), atomically: true, encoding: .utf8)
        let new = try RotationFixture.writeKey("NEWKEY0001", into: second)
        try link("NEWKEY0001")  // dangling until ..data moves: the loader must not choke on it for long
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("..data_tmp").path,
            withDestinationPath: second.lastPathComponent
        )
        #expect(rename(root.appendingPathComponent("..data_tmp").path, root.appendingPathComponent("..data").path) == 0)

        var seen = false
        for _ in 0..<100 where !seen {
            try await Task.sleep(for: .milliseconds(50))
            seen = holder.current.entry(for: "NEWKEY0001")?.key.fingerprint == new.fingerprint
        }
        #expect(seen, "the watcher picked up the new key after the ..data swap")
        // No key configured or activated: the key active before a reload stays active (a second file never
        // leaves the service without one, nor switches it).
        #expect(holder.current.activeKeyIdentifier == "OLDKEY0001")
    }
}

@Suite struct RotationUnderLoadTests {
    /// One signature request as a client saw it.
    struct Outcome: Sendable {
        var startedAt: ContinuousClock.Instant
        var status: HTTPResponse.Status
        var bundle: SignedLegacyOffer?
    }

    final class LoadRecorder: Sendable {
        let outcomes = Mutex<[Outcome]>([])
        let stop = Atomic<Bool>(false)
        let revokedAt = Mutex<ContinuousClock.Instant?>(nil)
        let new = Mutex<SigningKey?>(nil)

        /// Returns once the clients have recorded `count` more outcomes than when it was called.
        func waitForMoreRequests(_ count: Int) async throws {
            let target = outcomes.withLock { $0.count } + count
            let deadline = ContinuousClock.now + .seconds(60)
            while outcomes.withLock({ $0.count }) < target {
                guard ContinuousClock.now < deadline else {
                    Issue.record("the clients made fewer than \(count) requests in 60 s")
                    return
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// Requests the clients make in each phase: before the reload, after it, after the activation, after the revocation.
    static let perPhase = 16

    @Test("concurrent clients keep getting valid offers while a key is added, activated and the old one revoked")
    func rotationUnderLoad() async throws {
        let fixture = try await RotationFixture()
        defer { fixture.cleanUp() }
        let old = try #require(fixture.keys["OLDKEY0001"])
        let recorder = LoadRecorder()

        try await fixture.application.test(.router) { client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var n = 0
                        while !recorder.stop.load(ordering: .relaxed) {
                            n += 1
                            let startedAt = ContinuousClock.now
                            let response = try await client.post(
                                "/v1/offers/sign",
                                json:
                                    #"""
                                    {"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50",\#
                                    "applicationUsername":"user-\#(worker)-\#(n)"}
                                    """#
                            )
                            let bundle = try? response.decode(SignedLegacyOffer.self)
                            recorder.outcomes.withLock { $0.append(Outcome(startedAt: startedAt, status: response.status, bundle: bundle)) }
                        }
                    }
                }
                // Each phase lasts until the clients have made `perPhase` more requests (not a fixed time: a loaded
                // machine makes fewer per millisecond), so every phase is under load whatever the machine's speed.
                try await recorder.waitForMoreRequests(Self.perPhase)
                let written = try RotationFixture.writeKey("NEWKEY0001", into: fixture.directory)
                recorder.new.withLock { $0 = written }
                #expect(try await client.admin(.post, "/admin/keys/reload").status == .ok)
                try await recorder.waitForMoreRequests(Self.perPhase)
                #expect(try await client.admin(.post, "/admin/keys/NEWKEY0001/activate").status == .ok)
                try await recorder.waitForMoreRequests(Self.perPhase)
                #expect(try await client.admin(.post, "/admin/keys/OLDKEY0001/revoke").status == .ok)
                recorder.revokedAt.withLock { $0 = ContinuousClock.now }
                try await recorder.waitForMoreRequests(Self.perPhase)
                recorder.stop.store(true, ordering: .relaxed)
                try await group.waitForAll()
            }
        }
        let all = recorder.outcomes.withLock { $0 }
        let newKey = try #require(recorder.new.withLock { $0 })
        let revocation = try #require(recorder.revokedAt.withLock { $0 })
        #expect(all.count >= 4 * Self.perPhase, "enough load to mean something: \(all.count) requests")
        #expect(all.allSatisfy { $0.status == .ok }, "no request failed")
        let publicKeys = ["OLDKEY0001": old.publicKey, "NEWKEY0001": newKey.publicKey]
        for outcome in all {
            let bundle = try #require(outcome.bundle)
            let publicKey = try #require(publicKeys[bundle.keyIdentifier])
            let signature = try P256.Signing.ECDSASignature(derRepresentation: try #require(Data(base64Encoded: bundle.signature)))
            #expect(publicKey.isValidSignature(signature, for: bundle.payload.bytes), "every bundle verifies with the key it names")
        }
        #expect(all.contains { $0.bundle?.keyIdentifier == "OLDKEY0001" })
        #expect(all.contains { $0.bundle?.keyIdentifier == "NEWKEY0001" })
        let afterRevocation = all.filter { $0.startedAt > revocation }
        #expect(!afterRevocation.isEmpty)
        #expect(afterRevocation.allSatisfy { $0.bundle?.keyIdentifier == "NEWKEY0001" }, "after the revocation no bundle names the revoked key")
    }
}

@Suite struct SharedKeyStateTests {
    @Test("key states kept in the store reach every replica", arguments: StoreBackend.available)
    func replicasShareKeyStates(_ backend: StoreBackend) async throws {
        let store = try await backend.open()
        // Each run gets its own document name space: a fresh PostgreSQL test database is shared by runs.
        let old = try SigningKey.generate(keyIdentifier: "OLDKEY0001")
        let new = try SigningKey.generate(keyIdentifier: "NEWKEY0001")
        let entries = [KeyRing.Entry(key: old, source: "test"), KeyRing.Entry(key: new, source: "test")]
        let document = "key-states-test-\(UUID().uuidString)"
        func replica() async throws -> (KeyRingHolder, KeyManager) {
            let holder = KeyRingHolder(.empty)
            let manager = try await KeyManager(
                holder: holder,
                loadKeys: { entries },
                configuredActiveKeyIdentifier: "OLDKEY0001",
                stateStore: StoreKeyStateStore(store: store, documentName: document),
                logger: Logger(label: "test")
            )
            return (holder, manager)
        }
        let (holderA, managerA) = try await replica()
        let (holderB, managerB) = try await replica()
        _ = try await managerA.activate("NEWKEY0001", by: "alice")
        _ = try await managerA.revoke("OLDKEY0001", by: "alice")
        #expect(holderA.current.activeKeyIdentifier == "NEWKEY0001")
        #expect(holderB.current.activeKeyIdentifier == "OLDKEY0001")
        #expect(await managerB.refreshStates())
        #expect(holderB.current.activeKeyIdentifier == "NEWKEY0001")
        #expect(holderB.current.state(of: "OLDKEY0001") == .revoked)
        #expect(await !managerB.refreshStates())  // nothing new
        // A restarted replica starts from the shared states.
        let (holderC, _) = try await replica()
        #expect(holderC.current.state(of: "OLDKEY0001") == .revoked)
        try await store.close()
    }
}

@Suite struct PerAppActiveKeyTests {
    @Test func anAppWithItsOwnActiveKeySignsWithIt() async throws {
        let shared = try SigningKey.generate(keyIdentifier: "SHARED0001")
        let own = try SigningKey.generate(keyIdentifier: "OWNKEY0001")
        let entries = [KeyRing.Entry(key: shared, source: "t"), KeyRing.Entry(key: own, source: "t")]
        let service = SigningPipeline(
            apps: [AppConfiguration(bundleIdentifier: "com.example.a"), AppConfiguration(bundleIdentifier: "com.example.b")],
            keyRing: .empty
        )
        let manager = try await KeyManager(
            holder: service.keys,
            loadKeys: { entries },
            configuredActiveKeyIdentifier: "SHARED0001",
            appActiveKeyIdentifiers: ["com.example.b": "OWNKEY0001"],
            stateStore: InMemoryKeyStateStore(),
            logger: Logger(label: "t")
        )
        let a = try await service.signing.signLegacy(
            SignOfferRequest(bundleIdentifier: "com.example.a", productIdentifier: "p", offerIdentifier: "o", applicationUsername: "u")
        )
        let b = try await service.signing.signLegacy(
            SignOfferRequest(bundleIdentifier: "com.example.b", productIdentifier: "p", offerIdentifier: "o", applicationUsername: "u")
        )
        #expect(a.keyIdentifier == "SHARED0001")
        #expect(b.keyIdentifier == "OWNKEY0001")
        #expect(service.keys.current.state(of: "OWNKEY0001") == .active)
        // An app's own active key cannot be revoked from under it.
        await #expect(throws: KeyManagementError.self) { _ = try await manager.revoke("OWNKEY0001", by: "alice") }
    }
}
