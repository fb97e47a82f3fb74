import Foundation
import HTTPTypes
import Hummingbird
import OfferApplication
import OfferModel

/// The console's sessions over HTTP: the cookie that carries a session (``ConsoleSessions`` keeps them) and the
/// hidden field of every form.
extension ConsoleSessions {
    /// The cookie's name.
    static let cookieName = "offer_signer_session"
    /// The hidden field of every console form.
    static let csrfField = "csrf"

    /// The session cookie's value in a request's `Cookie` header.
    static func cookieValue(in request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == cookieName {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// Whether the request reached the service over TLS: through a proxy that says so (`X-Forwarded-Proto: https`)
    /// or, were the listener to terminate TLS itself, its scheme.
    static func isSecure(_ request: Request) -> Bool {
        if request.head.scheme == "https" { return true }
        guard let proto = request.headers[HTTPField.Name("X-Forwarded-Proto")!] else { return false }
        return proto.split(separator: ",").first?.trimmingCharacters(in: .whitespaces).lowercased() == "https"
    }

    /// The `Set-Cookie` value that stores `value` (or, with `nil`, deletes the cookie).
    static func setCookie(_ value: String?, secure: Bool) -> String {
        let maxAge = value == nil ? 0 : Int(lifetime)
        return "\(cookieName)=\(value ?? ""); Path=/console; Max-Age=\(maxAge); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }
}
