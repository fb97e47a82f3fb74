import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Testing

/// Get Notification History against the fake: the span Apple is asked for, every page followed by its token, the
/// payloads handed over in Apple's order, and the answers a reader must not trust.
@Suite struct NotificationHistoryTests {
    let fixture: Fixture

    init() throws {
        fixture = try Fixture()
    }

    /// Signed notifications (their content is the caller's business here: the client hands them over unread).
    private static func payloads(_ count: Int) -> [String] {
        (0..<count).map { "header.payload-\($0).signature" }
    }

    @Test func everyPageIsReadInOrderWithTheSpanAsked() async throws {
        let fixture = self.fixture
        let all = Self.payloads(45)
        let fake = fixture.fake { request in
            guard request.endpoint == .notificationHistory, let span = NotificationHistoryBody.Span(body: request.body), span.startDate < span.endDate
            else {
                return .error(.badRequest, code: 4_000_000)
            }
            let page = Int(request.query["paginationToken"] ?? "0") ?? 0
            let items = all.dropFirst(page * 20).prefix(20).map { NotificationHistoryBody.Item(signedPayload: $0, sent: span.startDate) }
            return .json(
                NotificationHistoryBody(paginationToken: String(page + 1), hasMore: (page + 1) * 20 < all.count, notificationHistory: Array(items))
            )
        }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let now = Date()
            let received = ReceivedPayloads()
            let count = try await client.notificationHistory(from: now.addingTimeInterval(-30 * 86_400), to: now, environment: .production) {
                await received.append($0)
            }
            #expect(count == 45)
            #expect(await received.all == all)
            #expect(await fake.ledger.paginationTokens == [nil, "1", "2"])
        }
    }

    @Test func aSpanApplesKeepsNoHistoryForIsRefusedBeforeAnyRequest() async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in .json(NotificationHistoryBody(paginationToken: "", hasMore: false, notificationHistory: [])) }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let now = Date()
            for (start, end) in [(now.addingTimeInterval(-181 * 86_400), now), (now, now.addingTimeInterval(-60))] {
                let error = await #expect(throws: AppStoreServerAPIError.self) {
                    try await client.notificationHistory(from: start, to: end, environment: .production) { _ in }
                }
                #expect(error?.code == .invalidRequest)
            }
            #expect(await fake.ledger.total == 0)
        }
    }

    @Test func aPageThatHasMoreWithoutANewTokenStopsTheReading() async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in
            .json(NotificationHistoryBody(paginationToken: "same", hasMore: true, notificationHistory: [.init(signedPayload: "a.b.c", sent: 0)]))
        }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let received = ReceivedPayloads()
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.notificationHistory(from: Date().addingTimeInterval(-86_400), to: Date(), environment: .production) {
                    await received.append($0)
                }
            }
            #expect(error?.code == .invalidResponse)
            #expect(await received.all == ["a.b.c", "a.b.c"])  // what was read before is handed over
            #expect(await fake.ledger.paginationTokens == [nil, "same"])
        }
    }
}

actor ReceivedPayloads {
    var all: [String] = []
    func append(_ payload: String) { all.append(payload) }
}
