module github.com/libjprof/libjprof

go 1.26
