import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferSignerServer
import OfferStore
import Testing

/// The admin API's edge: throttled failed authentication, percent-decoded customer paths.
@Suite struct AdminEdgeTests {
    @Test func failedAdminAuthenticationIsThrottledAfterTheBurst() async throws {
        let fixture = try await StoreFixture(.sqlite)
        try await fixture.application.test(.router) { client in
            var statuses: [HTTPResponse.Status] = []
            for attempt in 0..<14 {
                let response = try await client.execute(uri: "/admin/audit", method: .get, headers: [.authorization: "Bearer wrong-token-\(attempt)-0123456789"])
                statuses.append(response.status)
                if response.status == .tooManyRequests {
                    #expect(Int(try #require(response.headers[.retryAfter])) ?? 0 >= 1)
                    #expect(try response.decode(ErrorBody.self).error.code == "rate_limited")
                }
            }
            #expect(statuses.prefix(10).allSatisfy { $0 == .forbidden })
            #expect(statuses.dropFirst(10).allSatisfy { $0 == .tooManyRequests })
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
            let set = try await client.execute(uri: "/admin/customers/\(fixture.bundle)/%C3%84bc%20d/flags", method: .post, headers: headers, body: ByteBuffer(string: #"{"flags":{"churnRisk":"high"}}"#))
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
            let grant = try await client.execute(uri: "/admin/customers/\(fixture.bundle)/u/grants", method: .post, headers: headers, body: ByteBuffer(string: #"{"productIdentifier":"","offerIdentifier":""}"#))
            #expect(grant.status == .badRequest)
            #expect(try grant.decode(ErrorBody.self).error.field == "productIdentifier")
        }
        try await fixture.store.close()
    }
}
