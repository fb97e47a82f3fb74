import Foundation
@testable import OfferSignerServer
import Testing

/// The console's sessions: random cookies, expiry after 8 hours whatever happens, sign-out, a bounded number, and
/// the CSRF comparison.
@Suite struct ConsoleSessionTests {
    @Test("a session lives 8 hours, then is gone; sign-out ends it at once")
    func expiry() async {
        let sessions = ConsoleSessions()
        let start = ContinuousClock.now
        let (cookie, session) = await sessions.start(admin: "alice", now: start)
        #expect(session.admin == "alice")
        #expect(await sessions.session(cookie, now: start + .seconds(8 * 3600 - 1))?.csrfToken == session.csrfToken)
        #expect(await sessions.session(cookie, now: start + .seconds(8 * 3600)) == nil)
        let (other, _) = await sessions.start(admin: "bob", now: start)
        await sessions.end(other)
        #expect(await sessions.session(other, now: start) == nil)
        #expect(await sessions.session(String(repeating: "A", count: 4096), now: start) == nil)
    }

    @Test("cookies and CSRF tokens are 32 random bytes, each different; at most 1000 sessions, the oldest go first")
    func randomAndBounded() async {
        let sessions = ConsoleSessions()
        let start = ContinuousClock.now
        var cookies: [String] = []
        var tokens: Set<String> = []
        for index in 0..<(ConsoleSessions.maximumSessions + 5) {
            let (cookie, session) = await sessions.start(admin: "admin", now: start + .milliseconds(index))
            #expect(cookie.count == 43 && session.csrfToken.count == 43)
            cookies.append(cookie)
            tokens.insert(cookie)
            tokens.insert(session.csrfToken)
        }
        #expect(tokens.count == 2 * cookies.count)
        #expect(await sessions.session(cookies[0], now: start + .seconds(1)) == nil)
        #expect(await sessions.session(cookies.last!, now: start + .seconds(1)) != nil)
    }

    @Test("the CSRF comparison", arguments: [("abc", "abc", true), ("abc", "abd", false), ("ab", "abc", false), ("", "abc", false)])
    func constantTimeEqual(_ presented: String, _ expected: String, _ equal: Bool) {
        #expect(ConsoleSessions.constantTimeEqual(presented, expected) == equal)
    }
}
