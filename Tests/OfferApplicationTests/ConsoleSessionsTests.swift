import Foundation
import OfferApplication
import OfferModel
import Testing

/// ``ConsoleSessions`` over in-memory fakes of the session store and the audit log, and in this process's memory:
/// a session is found by its cookie until it expires or ends, the store never holds the cookie's value, and a
/// sign-in is audited.
@Suite struct ConsoleSessionsTests {
    let store = ConsoleSessionMemoryStore()
    let audit = AuditMemoryLog()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test(arguments: [true, false])
    func aSessionIsFoundUntilItExpires(inStore: Bool) async throws {
        let sessions = ConsoleSessions(store: inStore ? store : nil)
        let (cookie, started) = try await sessions.start(admin: "alice", now: now)
        let found = try #require(try await sessions.session(cookie, now: now + 60))
        #expect(found.admin == "alice" && found.csrfToken == started.csrfToken)
        #expect(started.expiresAt == now + ConsoleSessions.lifetime)
        #expect(try await sessions.session(cookie, now: now + ConsoleSessions.lifetime) == nil)
        #expect(try await sessions.session("another-cookie", now: now) == nil)
    }

    @Test(arguments: [true, false])
    func anEndedSessionIsGone(inStore: Bool) async throws {
        let sessions = ConsoleSessions(store: inStore ? store : nil)
        let (cookie, _) = try await sessions.start(admin: "alice", now: now)
        try await sessions.end(cookie)
        #expect(try await sessions.session(cookie, now: now) == nil)
        if inStore { #expect(store.records.isEmpty) }
    }

    @Test func theStoreKeepsTheCookiesDigestNeverTheCookie() async throws {
        let sessions = ConsoleSessions(store: store)
        let (cookie, _) = try await sessions.start(admin: "alice", now: now)
        let record = try #require(store.records.values.first)
        #expect(record.digest != cookie && record.digest.count == 64 && !record.digest.contains(cookie))
        // Another process on the same store finds it (replicas share sessions).
        #expect(try await ConsoleSessions(store: store).session(cookie, now: now)?.admin == "alice")
    }

    @Test func inMemoryTheOldestSessionGoesFirstPastTheMaximum() async throws {
        let sessions = ConsoleSessions()
        let (first, _) = try await sessions.start(admin: "first", now: now)
        for index in 1...ConsoleSessions.maximumSessions {
            _ = try await sessions.start(admin: "admin-\(index)", now: now + Double(index))
        }
        #expect(try await sessions.session(first, now: now + 1) == nil)
    }

    @Test func aSignInIsAuditedWithTheAdmin() async throws {
        let sessions = ConsoleSessions(store: store, audit: audit)
        _ = try await sessions.start(admin: "alice", now: now)
        let events = audit.appended
        #expect(events.count == 1)
        #expect(events.first?.action == "console.signin" && events.first?.actor == "alice" && events.first?.target == "console")
        #expect(events.first?.at == now)
    }

    @Test func anAuditThatCannotBeWrittenDoesNotStopTheSignIn() async throws {
        audit.failing(true)
        let sessions = ConsoleSessions(store: store, audit: audit)
        let (cookie, _) = try await sessions.start(admin: "alice", now: now)
        #expect(try await sessions.session(cookie, now: now)?.admin == "alice")
    }

    @Test func aStoreThatFailsIsStoreUnavailable() async throws {
        let sessions = ConsoleSessions(store: store)
        let (cookie, _) = try await sessions.start(admin: "alice", now: now)
        store.failing(true)
        let reading = await #expect(throws: OfferServiceError.self) { _ = try await sessions.session(cookie, now: now) }
        #expect(reading?.code == .storeUnavailable)
        let starting = await #expect(throws: OfferServiceError.self) { _ = try await sessions.start(admin: "bob", now: now) }
        #expect(starting?.code == .storeUnavailable)
    }

    @Test func anOverlongCookieIsNoSessionAndNeverLookedUp() async throws {
        let sessions = ConsoleSessions(store: store)
        store.failing(true)
        #expect(try await sessions.session(String(repeating: "a", count: 129), now: now) == nil)
    }
}
