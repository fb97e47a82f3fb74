import Foundation
import OfferApplication
import OfferModel
import OfferStore
import Testing

@testable import OfferSignerServer

/// The console's sessions: random cookies, expiry after 8 hours whatever happens, sign-out, a bounded number, and
/// the CSRF comparison.
@Suite struct ConsoleSessionTests {
    /// Sessions in memory, or in a store of each backend (two `ConsoleSessions` on two stores of one PostgreSQL
    /// database are two replicas).
    enum Keeper: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case memory, sqlite, postgres
        var testDescription: String { rawValue }
        static var available: [Keeper] { StoreBackend.postgresURL == nil ? [.memory, .sqlite] : allCases }

        func open() async throws -> (ConsoleSessions, ConsoleSessions, [any OfferStore]) {
            switch self {
            case .memory:
                let sessions = ConsoleSessions()
                return (sessions, sessions, [])
            case .sqlite:
                let store = try await StoreBackend.sqlite.open()
                return (ConsoleSessions(store: store), ConsoleSessions(store: store), [store])
            case .postgres:
                let (one, two) = (try await StoreBackend.postgres.open(), try await StoreBackend.postgres.open())
                return (ConsoleSessions(store: one), ConsoleSessions(store: two), [one, two])
            }
        }
    }

    @Test("a session lives 8 hours, then is gone; sign-out ends it at once — on the replica that did not sign in too", arguments: Keeper.available)
    func expiry(_ keeper: Keeper) async throws {
        let (sessions, replica, stores) = try await keeper.open()
        let start = Date()
        let (cookie, session) = try await sessions.start(admin: "alice", now: start)
        #expect(session.admin == "alice")
        #expect(try await replica.session(cookie, now: start + 8 * 3600 - 1)?.csrfToken == session.csrfToken)
        #expect(try await replica.session(cookie, now: start + 8 * 3600) == nil)
        let (other, _) = try await sessions.start(admin: "bob", now: start)
        #expect(try await replica.session(other, now: start)?.admin == "bob")
        try await replica.end(other)
        #expect(try await sessions.session(other, now: start) == nil)
        #expect(try await sessions.session(String(repeating: "A", count: 4096), now: start) == nil)
        #expect(try await sessions.session("never-issued", now: start) == nil)
        for store in stores { try await store.close() }
    }

    @Test(
        "cookies and CSRF tokens are 32 random bytes, each different; at most 1000 sessions, the oldest go first",
        arguments: [Keeper.memory, .sqlite]
    )
    func randomAndBounded(_ keeper: Keeper) async throws {
        let (sessions, _, stores) = try await keeper.open()
        let start = Date()
        var cookies: [String] = []
        var tokens: Set<String> = []
        for index in 0..<(ConsoleSessions.maximumSessions + 5) {
            let (cookie, session) = try await sessions.start(admin: "admin", now: start + Double(index) / 1000)
            #expect(cookie.count == 43 && session.csrfToken.count == 43)
            cookies.append(cookie)
            tokens.insert(cookie)
            tokens.insert(session.csrfToken)
        }
        #expect(tokens.count == 2 * cookies.count)
        #expect(try await sessions.session(cookies[0], now: start + 1) == nil)
        #expect(try await sessions.session(cookies.last!, now: start + 1) != nil)
        for store in stores { try await store.close() }
    }

    @Test("the CSRF comparison", arguments: [("abc", "abc", true), ("abc", "abd", false), ("ab", "abc", false), ("", "abc", false)])
    func constantTimeEqual(_ presented: String, _ expected: String, _ equal: Bool) {
        #expect(ConsoleSessions.constantTimeEqual(presented, expected) == equal)
    }
}
