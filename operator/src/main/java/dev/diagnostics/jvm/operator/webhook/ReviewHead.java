package dev.diagnostics.jvm.operator.webhook;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * The two fields of an AdmissionReview that an answer must echo (its apiVersion and the request's
 * uid), read with a streaming parser that builds nothing else: what a refusal costs, so that
 * refusing a flood stays cheaper than answering it. A body that is no AdmissionReview gives the
 * defaults.
 */
record ReviewHead(String apiVersion, String uid) {
  static final String V1 = "admission.k8s.io/v1";
  private static final JsonFactory JSON = new JsonFactory();

  static ReviewHead of(byte[] body) {
    String apiVersion = V1;
    String uid = "";
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) return new ReviewHead(apiVersion, uid);
      boolean haveUid = false, haveVersion = false;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        if ("apiVersion".equals(field) && value == JsonToken.VALUE_STRING) {
          apiVersion = p.getText();
          haveVersion = true;
        } else if ("request".equals(field) && value == JsonToken.START_OBJECT) {
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String inner = p.currentName();
            if (p.nextToken() == JsonToken.VALUE_STRING && "uid".equals(inner)) {
              uid = p.getText();
              haveUid = true;
              if (haveVersion) return new ReviewHead(apiVersion, uid);
            }
            p.skipChildren();
          }
        } else {
          p.skipChildren();
        }
        if (haveUid && haveVersion) break;
      }
    } catch (IOException | RuntimeException e) {
      // not JSON, or cut short: answer with what was found
    }
    return new ReviewHead(apiVersion, uid);
  }
}
