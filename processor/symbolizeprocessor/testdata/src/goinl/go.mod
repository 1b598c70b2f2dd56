module goinl

go 1.26
