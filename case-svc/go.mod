module github.com/openir/platform/case-svc

go 1.26.8

replace github.com/openir/platform/pkg => ../pkg

require github.com/openir/platform/pkg v0.0.0
