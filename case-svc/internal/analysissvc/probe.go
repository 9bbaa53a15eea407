package analysissvc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// Probe checks the server as TheHive's Cortex client does: GET /api/status must answer 2xx with a string
// versions.Cortex, then GET /api/user/current must accept the key. It answers the version ("" when unknown)
// and "OK", "AUTH_ERROR" (the server answers, the key is refused) or "ERROR" (unreachable, or not an
// analysis server). One attempt per call, no retries: the caller bounds it with ctx.
func (c *Client) Probe(ctx context.Context) (version, status string) {
	var st struct {
		Versions map[string]any `json:"versions"`
	}
	if code, err := c.probe(ctx, "/api/status", false, &st); err != nil || code/100 != 2 {
		return "", "ERROR"
	}
	v, ok := st.Versions["Cortex"].(string)
	if !ok {
		return "", "ERROR"
	}
	if code, err := c.probe(ctx, "/api/user/current", true, nil); err != nil || code/100 != 2 {
		return v, "AUTH_ERROR"
	}
	return v, "OK"
}

// probe makes one GET without retries and decodes a 2xx JSON answer into out (when not nil).
func (c *Client) probe(ctx context.Context, path string, auth bool, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return 0, err
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+c.srv.Key)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.rc.HTTPClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, 1<<20)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.NewDecoder(body).Decode(out); err != nil {
			return resp.StatusCode, err
		}
	}
	_, _ = io.Copy(io.Discard, body)
	return resp.StatusCode, nil
}
