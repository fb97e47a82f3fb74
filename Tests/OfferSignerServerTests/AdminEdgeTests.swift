import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferModel
import OfferStore
import Testing

@testable import OfferSignerServer

/// The admin API's edge: throttled failed authentication, percent-decoded customer paths.
@Suite struct AdminEdgeTests {
    @Test func failedAdminAuthenticationIsThrottledAfterTheBurst() async throws {
        let fixture = try await StoreFixture(.sqlite)
        try await fixture.application.test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            let started = ContinuousClock.now
            for attempt in 0..<14 {
                let response = try await client.execute(
                    uri: "/admin/audit",
                    method: .get,
                    headers: [.authorization: "Bearer wrong-token-\(attempt)-0123456789"]
                )
                statuses.append(response.status)
                if response.status == .tooManyRequests {
                    #expect(Int(try #require(response.headers[.retryAfter])) ?? 0 >= 1)
                    #expect(try response.decode(ErrorBody.self).error.code == "rate_limited")
                }
            }
            // One failure comes back every 6 s: beside the whole suite on two cores the 14 attempts can take that long,
            // and each refill lets one more attempt through (403). Quick, none does.
            let elapsed = ContinuousClock.now - started
            let refills = Int(elapsed / .seconds(AdminAuthenticationMiddleware.secondsPerFailure))
            #expect(statuses.prefix(10).allSatisfy { $0 == .forbidden })
            #expect(statuses.dropFirst(10).filter { $0 != .tooManyRequests }.count <= refills, "\(statuses) in \(elapsed)")
            #expect(statuses.dropFirst(10).allSatisfy { $0 == .tooManyRequests || $0 == .forbidden })
            #expect(statuses.dropFirst(10).contains(.tooManyRequests) || refills >= 4, "\(statuses) in \(elapsed)")
            // A good token still works.
            let good = try await client.execute(uri: "/admin/audit", method: .get, headers: [.authorization: "Bearer \(StoreFixture.adminToken)"])
            #expect(good.status == .ok)
        }
        try await fixture.store.close()
    }

    @Test func customerPathsArePercentDecoded() async throws {
        let fixture = try await StoreFixture(.sqlite)
        try await fixture.application.test(.router) { client in
            let headers: HTTPFields = [.authorization: "Bearer \(StoreFixture.adminToken)", .contentType: "application/json"]
            let set = try await client.execute(
                uri: "/admin/customers/\(fixture.bundle)/%C3%84bc%20d/flags",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: #"{"flags":{"churnRisk":"high"}}"#)
            )
            #expect(set.status == .ok)
            #expect(set.text.contains(#""applicationUsername":"äbc d""#))
            let read = try await client.execute(uri: "/admin/customers/\(fixture.bundle)/%C3%A4bc%20d", method: .get, headers: headers)
            #expect(read.text.contains(#""known":true"#))
            let bad = try await client.execute(uri: "/admin/customers/\(fixture.bundle)/%ZZ", method: .get, headers: headers)
            #expect(bad.status == .badRequest)
            let invisible = try await client.execute(uri: "/admin/customers/\(fixture.bundle)/a%E2%80%AEb", method: .get, headers: headers)
            #expect(invisible.status == .badRequest)
        }
        try await fixture.store.close()
    }

    @Test func badAuditLimitsAndEmptyGrantIdentifiersAre400() async throws {
        let fixture = try await StoreFixture(.sqlite)
        try await fixture.application.test(.router) { client in
            let headers: HTTPFields = [.authorization: "Bearer \(StoreFixture.adminToken)", .contentType: "application/json"]
            for limit in ["abc", "0", "10001", "-5"] {
                let response = try await client.execute(uri: "/admin/audit?limit=\(limit)", method: .get, headers: headers)
                #expect(response.status == .badRequest, "limit=\(limit)")
                #expect(try response.decode(ErrorBody.self).error.field == "limit")
            }
            #expect(try await client.execute(uri: "/admin/audit?limit=5", method: .get, headers: headers).status == .ok)
            let grant = try await client.execute(
                uri: "/admin/customers/\(fixture.bundle)/u/grants",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: #"{"productIdentifier":"","offerIdentifier":""}"#)
            )
            #expect(grant.status == .badRequest)
            #expect(try grant.decode(ErrorBody.self).error.field == "productIdentifier")
        }
        try await fixture.store.close()
    }

    @Test("customer writes: an app the service does not serve is 404; flags are bounded in number and printable")
    func customerWritesAreValidated() async throws {
        let fixture = try await StoreFixture(.sqlite)
        try await fixture.application.test(.router) { client in
            let headers: HTTPFields = [.authorization: "Bearer \(StoreFixture.adminToken)", .contentType: "application/json"]
            func flags(_ body: String, app: String? = nil) async throws -> TestResponse {
                try await client.execute(
                    uri: "/admin/customers/\(app ?? fixture.bundle)/flagged/flags",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: body)
                )
            }
            let unknownApp = try await flags(#"{"flags":{"churnRisk":"high"}}"#, app: "com.example.nope")
            #expect(unknownApp.status == .notFound)
            #expect(try unknownApp.decode(ErrorBody.self).error.code == "unknown_app")
            #expect(try await client.execute(uri: "/admin/customers/com.example.nope/flagged", method: .get, headers: headers).status == .notFound)

            for body in [#"{"flags":{"k\u0000":"v"}}"#, #"{"flags":{"":"v"}}"#, #"{"flags":{"k":"a\nb"}}"#] {
                let refused = try await flags(body)
                #expect(refused.status == .badRequest, "\(body)")
                #expect(try refused.decode(ErrorBody.self).error.field == "flags")
            }
            let many = (0...AdminCustomerRoutes.maximumFlags).map { #""f\#($0)":"x""# }.joined(separator: ",")
            #expect(try await flags(#"{"flags":{\#(many)}}"#).status == .badRequest)

            // Filled up to the bound in two requests; one more is refused and changes nothing; a removal makes room.
            let half = AdminCustomerRoutes.maximumFlags / 2
            let first = (0..<half).map { #""a\#($0)":"x""# }.joined(separator: ",")
            let second = (0..<(AdminCustomerRoutes.maximumFlags - half)).map { #""b\#($0)":"x""# }.joined(separator: ",")
            #expect(try await flags(#"{"flags":{\#(first)}}"#).status == .ok)
            #expect(try await flags(#"{"flags":{\#(second)}}"#).status == .ok)
            let over = try await flags(#"{"flags":{"one-more":"x"}}"#)
            #expect(over.status == .badRequest, "\(over.text)")
            let facts = try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "flagged"))
            #expect(facts?.flags.count == AdminCustomerRoutes.maximumFlags && facts?.flags["one-more"] == nil)
            #expect(try await flags(#"{"flags":{"a0":null,"one-more":"x"}}"#).status == .ok)

            // A customer holding more than the bound (flags set before it existed) can always be brought down.
            let crowded = CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "crowded")
            _ = try await fixture.store.updateCustomer(crowded) { facts in
                for index in 0..<(AdminCustomerRoutes.maximumFlags + 50) { facts.flags["old\(index)"] = "x" }
            }
            let removal = try await client.execute(
                uri: "/admin/customers/\(fixture.bundle)/crowded/flags",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: #"{"flags":{"old0":null,"old1":null}}"#)
            )
            #expect(removal.status == .ok, "\(removal.text)")
            let growth = try await client.execute(
                uri: "/admin/customers/\(fixture.bundle)/crowded/flags",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: #"{"flags":{"new":"x"}}"#)
            )
            #expect(growth.status == .badRequest)
        }
        try await fixture.store.close()
    }
}
