import Foundation

/// The code of one error type: a stable, machine-readable name in `snake_case` that tests compare and logs and HTTP
/// error bodies carry.
///
/// Each error type declares its codes as a struct conforming to this protocol, in swift-certificates' `ErrorCode`
/// pattern: the struct holds a case of an enum declared in the same file (package-visible, so that the server maps
/// every case to HTTP in an exhaustive switch, and a new code does not compile until it has its status), its
/// initializer is private, and each code is a static member. No code can be minted outside its file, and the codes of
/// two error types never mix.
public protocol ErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The `snake_case` name.
    var rawValue: String { get }
}

extension ErrorCode {
    public var description: String { rawValue }
}

/// An ``ErrorCode`` that is a case of an enum of its own: `Kind`, declared beside it with the `snake_case` names as raw
/// values. What every error type's `Code` shares is here once: its ``rawValue`` is its case's, its `description` that
/// name. A `Code` declares its `Kind`, the `kind` it holds, its package initializer and its static members.
package protocol KindedErrorCode: ErrorCode {
    /// Every code of the type: a code exists only as a case of it, so a switch over ``kind`` is exhaustive.
    associatedtype Kind: RawRepresentable<String>, CaseIterable, Sendable
    /// Which code this is.
    var kind: Kind { get }
}

extension KindedErrorCode {
    /// The `snake_case` name: the case's raw value.
    public var rawValue: String { kind.rawValue }
}

/// The one error shape of every OfferSigner library, modelled on swift-certificates' `CertificateError`: a stable
/// ``ErrorCode`` to compare and map, and a message for humans that says what is wrong and what to do — never key
/// material, a token or a raw customer identifier, never a Swift type name. Every conforming type is created the same
/// way, `init(_ code: Code, _ message: String, …)` (what follows the message is labelled and optional). The server
/// maps each conforming type to HTTP in one place.
public protocol CodedError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// The closed set of codes of this error type.
    associatedtype Code: ErrorCode
    /// What went wrong.
    var code: Code { get }
    /// What is wrong and what to do, for humans.
    var message: String { get }
}

extension CodedError {
    public var description: String { "\(code.rawValue): \(message)" }

    /// The message, so that `localizedDescription` and argument parsing show it rather than a type name.
    public var errorDescription: String? { message }
}
