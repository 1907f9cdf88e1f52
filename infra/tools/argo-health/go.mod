module github.com/mirrorhub/mirrorhub/infra/tools/argo-health

go 1.23

require github.com/yuin/gopher-lua v1.1.2
