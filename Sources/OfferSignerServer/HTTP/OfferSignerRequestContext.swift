import Foundation
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferModel

/// The request context of the service: a 64 KiB body limit (a sign request is well under 1 KiB; a StoreKit
/// `signedTransaction` or an App Store notification is a few KiB) and the API's JSON encoder.
public struct OfferSignerRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// What the access log reports once the response is known (the credential, the admin), shared by every
    /// copy of this context.
    public let requestLog = RequestLogRecord()
    /// The admin making an `/admin` request (the name of their token), set by the admin middleware; kept in
    /// ``requestLog`` so that the access log sees it too.
    public var adminName: String? {
        get { requestLog.admin }
        set { requestLog.admin = newValue }
    }
    /// Who is calling `/v1/offers/*`, set by the client authentication middleware.
    public var identity: ClientIdentity? {
        get { requestLog.identity }
        set { requestLog.identity = newValue }
    }
    /// The client's address (`nil` in router tests).
    public let remoteAddress: SocketAddress?
    /// The console session of a `/console` page, set by the console's session middleware.
    var consoleSession: ConsoleSession?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }

    /// The largest request body read, in bytes; larger bodies get 413 `payload_too_large`.
    public static let maximumBodySize = 64 * 1024

    public var maxUploadSize: Int { Self.maximumBodySize }

    /// The API's JSON, each answer ending in a newline.
    public var responseEncoder: some ResponseEncoder { APIResponseEncoder() }
}
