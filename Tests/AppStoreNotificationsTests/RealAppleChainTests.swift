import AppStoreNotifications
import Foundation
import Testing

/// Apple's real certificate chain (public certificates, from the test suite of Apple's app-store-server-library-swift):
/// "Prod ECC Mac App Store and iTunes Store Receipt Signing" ← "Apple Worldwide Developer Relations Certification
/// Authority G6" ← Apple Root CA - G3. Nobody here holds the leaf's key, so a JWS with this chain cannot carry a good
/// signature: the chain checks (bundled root, markers, RFC 5280, validity at signedDate) must pass and the signature
/// check must be what refuses it.
@Suite("Apple's real certificate chain")
struct RealAppleChainTests {
    static let leaf =
        """
        MIIEMTCCA7agAwIBAgIQR8KHzdn554Z/UoradNx9tzAKBggqhkjOPQQDAzB1MUQwQgYDVQQDDDtBcHBsZSBXb3JsZHdpZGUgRGV2ZWxvcGVyIFJlbGF0aW9ucyBDZXJ0aWZpY2F0a\
        W9uIEF1dGhvcml0eTELMAkGA1UECwwCRzYxEzARBgNVBAoMCkFwcGxlIEluYy4xCzAJBgNVBAYTAlVTMB4XDTI1MDkxOTE5NDQ1MVoXDTI3MTAxMzE3NDcyM1owgZIxQDA+BgNVBA\
        MMN1Byb2QgRUNDIE1hYyBBcHAgU3RvcmUgYW5kIGlUdW5lcyBTdG9yZSBSZWNlaXB0IFNpZ25pbmcxLDAqBgNVBAsMI0FwcGxlIFdvcmxkd2lkZSBEZXZlbG9wZXIgUmVsYXRpb25\
        zMRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABNnVvhcv7iT+7Ex5tBMBgrQspHzIsXRi0Yxfek7lv8wEmj/bHiWtNwJq\
        c2BoHzsQiEjP7KFIIKg4Y8y0/nynuAmjggIIMIICBDAMBgNVHRMBAf8EAjAAMB8GA1UdIwQYMBaAFD8vlCNR01DJmig97bB85c+lkGKZMHAGCCsGAQUFBwEBBGQwYjAtBggrBgEFB\
        QcwAoYhaHR0cDovL2NlcnRzLmFwcGxlLmNvbS93d2RyZzYuZGVyMDEGCCsGAQUFBzABhiVodHRwOi8vb2NzcC5hcHBsZS5jb20vb2NzcDAzLXd3ZHJnNjAyMIIBHgYDVR0gBIIBFT\
        CCAREwggENBgoqhkiG92NkBQYBMIH+MIHDBggrBgEFBQcCAjCBtgyBs1JlbGlhbmNlIG9uIHRoaXMgY2VydGlmaWNhdGUgYnkgYW55IHBhcnR5IGFzc3VtZXMgYWNjZXB0YW5jZSB\
        vZiB0aGUgdGhlbiBhcHBsaWNhYmxlIHN0YW5kYXJkIHRlcm1zIGFuZCBjb25kaXRpb25zIG9mIHVzZSwgY2VydGlmaWNhdGUgcG9saWN5IGFuZCBjZXJ0aWZpY2F0aW9uIHByYWN0\
        aWNlIHN0YXRlbWVudHMuMDYGCCsGAQUFBwIBFipodHRwOi8vd3d3LmFwcGxlLmNvbS9jZXJ0aWZpY2F0ZWF1dGhvcml0eS8wHQYDVR0OBBYEFIFioG4wMMVA1ku9zJmGNPAVn3eqM\
        A4GA1UdDwEB/wQEAwIHgDAQBgoqhkiG92NkBgsBBAIFADAKBggqhkjOPQQDAwNpADBmAjEA+qXnREC7hXIWVLsLxznjRpIzPf7VHz9V/CTm8+LJlrQepnmcPvGLNcX6XPnlcgLAAj\
        EA5IjNZKgg5pQ79knF4IbTXdKv8vutIDMXDmjPVT3dGvFtsGRwXOywR2kZCdSrfeot
        """
    static let intermediate =
        """
        MIIDFjCCApygAwIBAgIUIsGhRwp0c2nvU4YSycafPTjzbNcwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY\
        2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMjEwMzE3MjAzNzEwWhcNMzYwMzE5MDAwMDAwWjB1MUQwQgYDVQQDDDtBcHBsZSBXb3\
        JsZHdpZGUgRGV2ZWxvcGVyIFJlbGF0aW9ucyBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTELMAkGA1UECwwCRzYxEzARBgNVBAoMCkFwcGxlIEluYy4xCzAJBgNVBAYTAlVTMHYwEAY\
        HKoZIzj0CAQYFK4EEACIDYgAEbsQKC94PrlWmZXnXgtxzdVJL8T0SGYngDRGpngn3N6PT8JMEb7FDi4bBmPhCnZ3/sq6PF/cGcKXWsL5vOteRhyJ45x3ASP7cOB+aao90fcpxSv/E\
        ZFbniAbNgZGhIhpIo4H6MIH3MBIGA1UdEwEB/wQIMAYBAf8CAQAwHwYDVR0jBBgwFoAUu7DeoVgziJqkipnevr3rr9rLJKswRgYIKwYBBQUHAQEEOjA4MDYGCCsGAQUFBzABhipod\
        HRwOi8vb2NzcC5hcHBsZS5jb20vb2NzcDAzLWFwcGxlcm9vdGNhZzMwNwYDVR0fBDAwLjAsoCqgKIYmaHR0cDovL2NybC5hcHBsZS5jb20vYXBwbGVyb290Y2FnMy5jcmwwHQYDVR\
        0OBBYEFD8vlCNR01DJmig97bB85c+lkGKZMA4GA1UdDwEB/wQEAwIBBjAQBgoqhkiG92NkBgIBBAIFADAKBggqhkjOPQQDAwNoADBlAjBAXhSq5IyKogMCPtw490BaB677CaEGJXu\
        fQB/EqZGd6CSjiCtOnuMTbXVXmxxcxfkCMQDTSPxarZXvNrkxU3TkUMI33yzvFVVRT4wxWJC994OsdcZ4+RGNsYDyR5gmdr0nDGg=
        """

    /// A JWS with Apple's real chain, a transaction signed (supposedly) at `signedDate` and a zero signature.
    private func jws(signedDate: Date) throws -> String {
        let rootPEM = TrustedRootCertificates.appleRootCAG3PEM
            .split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let header: [String: Any] = ["alg": "ES256", "x5c": [Self.leaf, Self.intermediate, rootPEM]]
        let payload: [String: Any] = [
            "bundleId": "com.example", "environment": "Production",
            "signedDate": signedDate.appStoreMilliseconds,
        ]
        let signature = Data(count: 64).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let withHeader = try JWSTampering.replacing(segment: 0, of: "h.p.\(signature)", with: header)
        return try JWSTampering.replacing(segment: 1, of: withHeader, with: payload)
    }

    private func code(at signedDate: Date) async throws -> SignedDataVerificationError.Code? {
        let verifier = try SignedDataVerifier(bundleIdentifier: "com.example", appAppleId: 1)
        let token = try jws(signedDate: signedDate)
        do {
            _ = try await verifier.verifyAndDecodeTransaction(token)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("passes every chain check with the bundled root at a date inside its validity; only the signature fails")
    func realChainPassesChainChecks() async throws {
        #expect(try await code(at: Date(timeIntervalSince1970: 1_761_962_975)) == .invalidSignature)  // October 2025
    }

    @Test("is refused as expired at a signedDate after the leaf expired (October 2027)")
    func realChainExpired() async throws {
        #expect(try await code(at: Date(timeIntervalSince1970: 1_830_000_000)) == .certificateExpired)  // 2027-12
    }

    @Test("is refused as not yet valid at a signedDate before the leaf was issued (September 2025)")
    func realChainNotYetValid() async throws {
        #expect(try await code(at: Date(timeIntervalSince1970: 1_750_000_000)) == .certificateNotYetValid)  // 2025-06
    }
}
