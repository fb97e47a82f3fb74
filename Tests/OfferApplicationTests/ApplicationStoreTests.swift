import Foundation
import Logging
import OfferApplication
import OfferKeys
import OfferModel
import Testing

/// ``ApplicationStore`` on a real SQLite store (no fake: opening is the store's own job): what opens, what is
/// refused and with which code, and what the server gets from it.
@Suite struct ApplicationStoreTests {
    let logger = Logger(label: "test")

    @Test func aSQLiteStoreOpensWithoutSharedLimitsAndKeepsKeyStates() async throws {
        let store = try await ApplicationStore.open(databaseURL: "sqlite::memory:", timeout: .seconds(2), serving: false, logger: logger)
        #expect(store.backend == "sqlite")
        #expect(store.sharedLimits == nil)  // one process: its own buckets are the fleet's
        #expect(try await store.storedPolicy() == nil)
        let states = KeyStates(version: 1, activeKeyIdentifier: "KEY1")
        #expect(try await store.keyStates.save(states))
        #expect(try await store.keyStates.load().activeKeyIdentifier == "KEY1")
        try await store.close()
    }

    @Test(arguments: ["mysql://host/db", "sqlite:"])
    func aURLNoStoreCanOpenIsInvalid(_ url: String) async throws {
        let checked = #expect(throws: StoreOpeningError.self) { try ApplicationStore.check(databaseURL: url) }
        #expect(checked?.code == .invalidStore)
        let opened = await #expect(throws: StoreOpeningError.self) {
            _ = try await ApplicationStore.open(databaseURL: url, timeout: .seconds(2), serving: false, logger: logger)
        }
        #expect(opened?.code == .invalidStore)
        #expect(opened?.message == checked?.message)
    }

    @Test func aSQLiteFileAServerHoldsIsRefusedToASecondServer() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("application-store-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let first = try await ApplicationStore.open(databaseURL: "sqlite:\(file)", timeout: .seconds(2), serving: true, logger: logger)
        let error = await #expect(throws: StoreOpeningError.self) {
            _ = try await ApplicationStore.open(databaseURL: "sqlite:\(file)", timeout: .seconds(2), serving: true, logger: logger)
        }
        #expect(error?.code == .invalidStore)
        try await first.close()
    }

    /// A tool's use cases (``OfferSignerUseCases/forTools(apps:policy:store:notifications:retentionMessaging:)``)
    /// over a store it opened: the store's use cases are there, signing has no key, and closing them closes the store.
    @Test func aToolsUseCasesRunOverTheStoreItOpened() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tool-store-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        let store = try await ApplicationStore.open(databaseURL: "sqlite:\(file)", timeout: .seconds(2), serving: false, logger: logger)
        let useCases = OfferSignerUseCases.forTools(
            apps: [AppConfiguration(bundleIdentifier: "com.example.app")],
            policy: nil,
            store: store,
            notifications: nil
        )
        #expect(useCases.policy.canDryRun)
        #expect(useCases.notifications == nil)
        #expect(useCases.keys == nil)
        #expect(try useCases.signing.app(named: nil).bundleIdentifier == "com.example.app")
        #expect(try await useCases.customerView?.facts(of: CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "nobody")) == nil)
        let unsigned = await #expect(throws: (any Error).self) {
            _ = try await useCases.signing.signLegacy(
                SignOfferRequest(productIdentifier: "com.example.monthly", offerIdentifier: "winback", applicationUsername: "nobody")
            )
        }
        #expect(unsigned != nil, "a tool has no signing key")
        try await useCases.closeStore()
        let closed = await #expect(throws: (any Error).self) { _ = try await store.storedPolicy() }
        #expect(closed != nil, "closing the use cases closes the store")
        let storeless = OfferSignerUseCases.forTools(
            apps: [AppConfiguration(bundleIdentifier: "com.example.app")],
            policy: nil,
            store: nil,
            notifications: nil
        )
        #expect(!storeless.policy.canDryRun && storeless.customerView == nil)
    }
}
