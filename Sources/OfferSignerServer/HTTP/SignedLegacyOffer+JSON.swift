import Foundation
import Hummingbird
import NIOCore
import OfferApplication
import OfferSigning

extension SignedLegacyOffer: ResponseGenerator, APIJSONWritable {
    /// The answer of `POST /v1/offers/sign` (legacy), for both front ends: ``apiJSON`` with the router's JSON
    /// content type. (It does not follow the request context's `responseEncoder`: should that change, change this.)
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: apiJSON))
    }

    /// The bundle's JSON, field by field, keys sorted (``apiJSON`` is it and a newline, as every answer ends): the
    /// encoder cost ~7 µs a signature (3 % of the server's CPU in a profile), this a few hundred nanoseconds.
    func writeJSON<Output: APIJSONOutput>(to out: inout Output) {
        out.raw("{\"applicationUsername\":")
        out.literal(applicationUsername)
        out.raw(",\"bundleIdentifier\":")
        out.literal(bundleIdentifier)
        out.raw(",\"format\":")
        out.literal(format)
        out.raw(",\"keyIdentifier\":")
        out.literal(keyIdentifier)
        out.raw(",\"nonce\":")
        out.literal(nonce)
        out.raw(",\"offerIdentifier\":")
        out.literal(offerIdentifier)
        out.raw(",\"productIdentifier\":")
        out.literal(productIdentifier)
        out.raw(",\"signature\":")
        out.literal(signature)
        out.raw(",\"timestamp\":")
        out.integer(timestamp)
        out.raw("}")
    }
}
