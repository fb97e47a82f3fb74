import AppStoreTestSupport
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
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The event-loop path of `POST /v1/offers/sign` (issue 17), beyond the route tests every front end runs: which
/// requests it takes, that a signature is durable in the store before its reply, HTTP/1 order when requests are
/// pipelined past it, and `Connection: close`.
@Suite struct EventLoopSigningTests {
    static let body = #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1"}"#

    /// Hummingbird's request logger adds `hb.request.id`; the event-loop path has no Hummingbird request, so its
    /// access-log line has none: that tells which front end answered. In the open mode every request of the route
    /// is the path's (a JWS and a refusal included, answered as the router answers them); only another URI is the
    /// router's.
    @Test func itAnswersEveryRequestOfTheRouteItAuthenticates() async throws {
        let test = try TestService()
        let lines = LogLines()
        let app = FrontEnd.eventLoop.application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: test.service, keyManager: nil)),
            service: test.service,
            logger: lines.logger("offer-signer")
        )
        try await app.test(.live) { client in
            let signed = try await client.post("/v1/offers/sign", json: Self.body)
            let jws = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","format":"jws"}"#
            )
            let invalid = try await client.post("/v1/offers/sign", json: #"{"productIdentifier":"p","offerIdentifier":"o"}"#)
            let query = try await client.execute(
                uri: "/v1/offers/sign?x=1",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(string: Self.body)
            )
            // A JWS without an issuer is 503 (from the pipeline that waits); the query string is the router's.
            #expect([signed.status, jws.status, invalid.status, query.status] == [.ok, .serviceUnavailable, .badRequest, .ok])
            #expect(try jws.decode(ErrorBody.self).error.code == "issuer_not_configured")
            // Every JSON answer ends with a newline, whichever front end wrote it (a signature, an error, the router's).
            let keys = try await client.execute(uri: "/v1/keys", method: .get)
            for response in [signed, jws, invalid, query, keys] {
                #expect(response.body.readableBytesView.last == UInt8(ascii: "\n"), "\(response.status)")
                #expect(response.headers[.contentLength] == String(response.body.readableBytes))
            }
        }
        let access = try lines.objects().filter { $0["message"] == "request" && $0["route"] != "/v1/keys" }
        #expect(access.map { $0["status"] } == ["200", "503", "400", "200"])
        #expect(access.map { $0["hb.request.id"] == nil } == [true, true, true, false])
        #expect(access.allSatisfy { $0["route"] == "/v1/offers/sign" && $0["credential"] == "open" && $0["requestId"] != nil })
    }

    /// A request is handed to the router only when the path cannot check its credential at once (a login JWT, a
    /// key it does not know, none): nothing of it was read here, so nothing is checked twice. A known API key is
    /// the path's to the end, a body it refuses included.
    @Test func onlyACredentialItCannotCheckAtOnceGoesToTheRouter() async throws {
        let test = try TestService()
        let lines = LogLines()
        let authenticator = try await ClientAuthenticator(ClientAuthenticationTests.both)
        let app = FrontEnd.eventLoop.application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: test.service, keyManager: nil), authenticator: authenticator),
            service: test.service,
            authenticator: authenticator,
            logger: lines.logger("offer-signer")
        )
        let login = try await ClientAuthenticationTests.hs256(customer: "user-1")
        try await app.test(.live) { client in
            func sign(_ authorization: String?, _ body: String = Self.body) async throws -> TestResponse {
                var headers: HTTPFields = [.contentType: "application/json"]
                if let authorization { headers[.authorization] = authorization }
                return try await client.execute(uri: "/v1/offers/sign", method: .post, headers: headers, body: ByteBuffer(string: body))
            }
            let key = try await sign("Bearer \(ClientAuthenticationTests.apiKey)")
            let keyBadBody = try await sign("Bearer \(ClientAuthenticationTests.apiKey)", #"{"productIdentifier":1}"#)
            let jwt = try await sign("Bearer \(login)")
            let unknown = try await sign("Bearer not-a-key-of-ours-0123456789")
            let none = try await sign(nil)
            #expect(
                [key.status, keyBadBody.status, jwt.status, unknown.status, none.status] == [.ok, .badRequest, .ok, .unauthorized, .unauthorized]
            )
            #expect(unknown.headers[.wwwAuthenticate] == "Bearer realm=\"offer-signer\"")
        }
        let access = try lines.objects().filter { $0["message"] == "request" }
        #expect(access.map { $0["status"] } == ["200", "400", "200", "401", "401"])
        #expect(access.map { $0["hb.request.id"] == nil } == [true, true, false, false, false])
    }

    @Test("every signature it returns is already in the store's log", arguments: StoreBackend.available)
    func signaturesAreDurableBeforeTheReply(_ backend: StoreBackend) async throws {
        let store = try await backend.open()
        let key = try SigningKey.generate(keyIdentifier: "TESTKEY001")
        let bundle = "com.example.el-\(UUID().uuidString.prefix(8).lowercased())"
        let service = SigningPipeline(
            apps: [AppConfiguration(bundleIdentifier: bundle)],
            keyRing: try KeyRing(keys: [.init(key: key, source: "test")]),
            store: store
        )
        let app = FrontEnd.eventLoop.application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)),
            service: service
        )
        try await app.test(.live) { client in
            let one = try await client.post("/v1/offers/sign", json: Self.body).decode(SignedLegacyOffer.self)
            let logged = try await store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: bundle))
            #expect(logged.map(\.nonce) == [one.nonce])
            let nonces = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let response = try await client.post(
                            "/v1/offers/sign",
                            json: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"many-\#(index)"}"#
                        )
                        let offer = try response.decode(SignedLegacyOffer.self)
                        // Durable before the reply: the record is there the moment the answer arrives.
                        let found: [IssuedSignature] = try await store.issuedSignatures(
                            matching: IssuedSignatureQuery(bundleIdentifier: bundle, applicationUsername: "many-\(index)")
                        )
                        #expect(found.map(\.nonce) == [offer.nonce])
                        return offer.nonce
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(nonces.count == 20)
            let count = try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: bundle))
            #expect(count == 21)
            #expect(service.signatureCountsByKey["TESTKEY001"] == 21)
        }
        try await store.close()
    }

    /// A rule over issued offers through the event-loop path — on a SQLite file the server holds decided on the
    /// connection's event loop under the customer's lock, held until the signature is durable; elsewhere (and when
    /// the lock is taken) by the pipeline's task on that loop: the cap holds under a storm, every answer's signature
    /// is in the log when it arrives, and the lock is released (a later request is answered, refused).
    @Test(
        "a cap of 1 through the event-loop path: 64 concurrent requests sign once, five times over; each lock is released",
        arguments: ConcurrencyTests.RaceStore.all
    )
    func aCapDecidedOnTheEventLoopHolds(_ race: ConcurrencyTests.RaceStore) async throws {
        let fixture = try await StoreFixture(race.backend, exclusive: race.exclusive)
        let app = FrontEnd.eventLoop.application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: fixture.service, keyManager: nil)),
            service: fixture.service
        )
        try await app.test(.live) { client in
            for round in 0..<5 {
                let body =
                    #"{"productIdentifier":"\#(TestPayloads.productIdentifier)","offerIdentifier":"once","applicationUsername":"el-\#(round)"}"#
                let answers = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
                    for _ in 0..<64 {
                        group.addTask {
                            let response = try await client.post("/v1/offers/sign", json: body)
                            return (response.status, response.status == .ok ? try response.decode(SignedLegacyOffer.self).nonce : nil)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(answers.filter { $0.0 == .ok }.count == 1, "round \(round)")
                #expect(answers.filter { $0.0 == .forbidden }.count == 63, "round \(round)")
                let logged = try await fixture.store.issuedSignatures(
                    matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, applicationUsername: "el-\(round)")
                )
                #expect(logged.map(\.nonce) == answers.compactMap(\.1))
                // The lock was released: the next request for the customer is decided (refused by the cap), not left waiting.
                #expect(try await client.post("/v1/offers/sign", json: body).status == .forbidden)
            }
        }
        await fixture.store.flushDecisionLog()
        let logged = try await fixture.store.policyDecisions(bundleIdentifiers: [fixture.bundle], since: 0, until: .max, after: nil, limit: 10_000)
        #expect(logged.count == 5 * 65)
        #expect(logged.filter(\.granted).count == 5)
        try await fixture.store.close()
    }

    @Test func aClosedStoreIs503AndNoSignatureIsReturned() async throws {
        let store = try await StoreBackend.sqlite.open()
        let test = try TestService()
        let service = SigningPipeline(apps: [AppConfiguration(bundleIdentifier: "com.example.app")], keyRing: test.service.keys.current, store: store)
        try await store.close()
        let app = FrontEnd.eventLoop.application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)),
            service: service
        )
        try await app.test(.live) { client in
            let response = try await client.post("/v1/offers/sign", json: Self.body)
            #expect(response.status == .serviceUnavailable)
            #expect(try response.decode(ErrorBody.self).error.code == "store_unavailable")
            #expect(!response.text.contains("signature\":"))
        }
    }

    /// Requests pipelined on one connection — signed here, handed to the router, signed again — are answered in the
    /// order they were sent.
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let test = try TestService()
        try await test.application(.eventLoop).test(.live) { client in
            let port = try #require(client.port)
            func sign(_ customer: String) -> String {
                let body = #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"\#(customer)"}"#
                return
                    """
                    POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \
                    \(body.utf8.count)\r\n\r\n\(body)
                    """
            }
            let requests = sign("first") + "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n" + sign("second") + sign("third")
            let answer = try await RawHTTP.exchange(port: port, send: requests, responses: 4)
            let order = answer.components(separatedBy: "HTTP/1.1 ").dropFirst().map { response in
                ["first", "second", "third"].first { response.contains(#""applicationUsername":"\#($0)""#) }
                    ?? (response.hasPrefix("200") ? "health" : "?")
            }
            #expect(order == ["first", "health", "second", "third"])
        }
    }

    /// A parse error or the client's half-close, read while an answer is pending, reach the router after that
    /// answer, never ahead of it (found by an attack on the first version: the 400 overtook the 200 and the
    /// signature's reply was lost).
    @Test func aParseErrorOrAHalfCloseAfterASignRequestWaitsForItsAnswer() async throws {
        let test = try TestService()
        try await test.application(.eventLoop).test(.live) { client in
            let port = try #require(client.port)
            let sign =
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \
                \(Self.body.utf8.count)\r\n\r\n\(Self.body)
                """
            let garbage = try await RawHTTP.exchange(port: port, send: sign + "GARBAGE \u{01}\u{02} nonsense\r\n\r\n", responses: nil)
            let statuses = garbage.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
            #expect(statuses == ["200", "400"])
            let halfClosed = try await RawHTTP.exchange(
                port: port,
                send: sign + "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n" + sign,
                responses: nil,
                halfClose: true
            )
            #expect(halfClosed.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) } == ["200", "200", "200"])
        }
    }

    @Test func connectionCloseIsHonoured() async throws {
        let test = try TestService()
        try await test.application(.eventLoop).test(.live) { client in
            let port = try #require(client.port)
            let request =
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \
                \(Self.body.utf8.count)\r\n\r\n\(Self.body)
                """
            // `exchange` reads until the server closes the connection.
            let answer = try await RawHTTP.exchange(port: port, send: request, responses: nil)
            #expect(answer.hasPrefix("HTTP/1.1 200"))
            #expect(answer.lowercased().contains("connection: close"))
        }
    }
}

/// A blocking HTTP/1.1 exchange over a plain socket, for what a test client cannot send (pipelined requests).
enum RawHTTP {
    struct Failure: Error { var message: String }

    /// Sends `text` to 127.0.0.1:`port` and reads until `responses` complete responses (by Content-Length) have
    /// arrived, or (`nil`) until the server closes; gives up after 10 s.
    static func exchange(port: Int, send text: String, responses: Int?, halfClose: Bool = false) async throws -> String {
        // On a thread of its own: a blocking read on Swift's cooperative pool (two threads on two cores) can
        // starve the server's own tasks under test.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, any Error>) in
            Thread {
                continuation.resume(with: Result { try blockingExchange(port: port, send: text, responses: responses, halfClose: halfClose) })
            }.start()
        }
    }

    private static func blockingExchange(port: Int, send text: String, responses: Int?, halfClose: Bool) throws -> String {
        let descriptor = try connected(port: port)
        defer { close(descriptor) }
        guard sendAll(descriptor, Array(text.utf8)) else { throw Failure(message: "send") }
        if halfClose { shutdown(descriptor, Int32(SHUT_WR)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let responses, complete(received) >= responses { break }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// What ``session(port:sends:responses:)`` saw.
    struct Session: Sendable {
        /// Everything read.
        var text: String
        /// Seconds from the start of the first send to the server's close as seen here (a failed send, or the end of
        /// the stream); `nil`: open. Never less than the server's time from reading the first bytes to closing.
        var closedSinceStart: Double?
        /// Seconds from the start of the last send that went through to the server's close as seen here. Never less
        /// than the server's time from reading those bytes to closing.
        var closedSinceLastSend: Double?
        /// Whether the close was seen by a send that failed, before every text was sent.
        var closedWhileSending = false
    }

    /// Sends each text on one connection after its pause (stopping when a send fails: the server closed), then
    /// reads until `responses` complete responses have arrived, or (`nil`) until the server closes; gives up 10 s
    /// after the last send.
    static func session(port: Int, sends: [(pause: Double, text: String)], responses: Int?) async throws -> Session {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Session, any Error>) in
            Thread {
                continuation.resume(with: Result { try blockingSession(port: port, sends: sends, responses: responses) })
            }.start()
        }
    }

    private static func blockingSession(port: Int, sends: [(pause: Double, text: String)], responses: Int?) throws -> Session {
        let descriptor = try connected(port: port)
        defer { close(descriptor) }
        let start = ContinuousClock.now
        var lastSend = start
        func seconds(since instant: ContinuousClock.Instant) -> Double {
            let elapsed = ContinuousClock.now - instant
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
        var received: [UInt8] = []
        for (pause, text) in sends {
            Thread.sleep(forTimeInterval: pause)
            let sending = ContinuousClock.now
            guard sendAll(descriptor, Array(text.utf8)) else {
                return Session(
                    text: "",
                    closedSinceStart: seconds(since: start),
                    closedSinceLastSend: seconds(since: lastSend),
                    closedWhileSending: true
                )
            }
            lastSend = sending
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let responses, complete(received) >= responses { return Session(text: String(decoding: received, as: UTF8.self)) }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) {
                return Session(
                    text: String(decoding: received, as: UTF8.self),
                    closedSinceStart: seconds(since: start),
                    closedSinceLastSend: seconds(since: lastSend)
                )
            }
            if count < 0 { throw Failure(message: "recv (timed out)") }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    /// Sends `bytes` in one call; whether all of them went. A server that has closed fails it with an error, never a
    /// SIGPIPE (Linux: MSG_NOSIGNAL on the call; Darwin: SO_NOSIGPIPE on the socket, set by ``connected(port:)``).
    private static func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        #if canImport(Glibc)
        Glibc.send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count
        #else
        Darwin.send(descriptor, bytes, bytes.count, 0) == bytes.count
        #endif
    }

    /// A socket connected to 127.0.0.1:`port`, reads timing out after 10 s.
    private static func connected(port: Int) throws -> Int32 {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure(message: "socket") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #if canImport(Darwin)
        var noSignal: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &noSignal, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(descriptor)
            throw Failure(message: "connect")
        }
        return descriptor
    }

    /// How many complete responses (head and Content-Length body) `bytes` holds.
    static func complete(_ bytes: [UInt8]) -> Int {
        let text = String(decoding: bytes, as: UTF8.self)
        var count = 0
        var rest = Substring(text)
        while let headEnd = rest.range(of: "\r\n\r\n") {
            let head = rest[..<headEnd.lowerBound].lowercased()
            let length =
                head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            let body = rest[headEnd.upperBound...]
            guard body.utf8.count >= length else { break }
            count += 1
            rest = body.dropFirst(0)[body.utf8.index(body.startIndex, offsetBy: length)...]
        }
        return count
    }
}
