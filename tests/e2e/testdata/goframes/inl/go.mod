module nxvgoinl

go 1.26
